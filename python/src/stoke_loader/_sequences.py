"""Sequences (#37): token stores read in place, and loaders that pad, pack or bucket them.

A token store is Megatron-LM's indexed dataset (``<prefix>.bin`` + ``<prefix>.idx``), read in
place or, named by URLs (``s3://``, ``http(s)://``, ``file://``), through stoke's byte stores; its
sequences (one per document, as :func:`write_texts` writes them) are batched by a plan that
is a pure function of (seed, epoch, lengths, sizes), run by stoke's own multithread loader:

- :func:`padded`: ``batch_size`` sequences a batch, padded to the longest (or a multiple);
- :func:`packed`: rows of ``sequence_length`` tokens, by concatenate-then-split (``shifted``
  adds the next token of each row for shifted targets), first-fit or best-fit;
- :func:`bucketed`: sequences of like length under a token budget (padding counted).

Each batch is a :class:`SequenceBatch` whose columns are arrays over its memory (DLPack, no
copy): ``tokens``, ``positions`` (restarting at each document), ``segment_ids`` (1, 2, ... in
a row; 0 on padding), ``cu_seqlens`` (segment ends over the flattened batch, padding a segment
of its own), ``loss_mask`` (1 where the next slot continues the same document), ``mask`` (1 on
real tokens, whatever their value) and ``documents`` (the store index of each segment).
``split``/``share`` give every device and rank the same number of batches; ``state_dict`` /
``load_state_dict`` resume exactly, also onto another number of shares.

:func:`mixture` blends several token stores by weight (exact at every prefix of the epoch); a
:class:`Mixture` goes wherever a token store does.
"""

from __future__ import annotations

import os
from typing import Optional, Sequence, Union

from . import DEFAULT_MAX_HELD_BATCHES, SequenceLoader, _native, _stored  # defined before this
from ._native import SequenceBatch, UsageError

_PathLike = Union[str, "os.PathLike[str]"]
# Plan windows: batches per window (concat, pad) or sequences per window (fit, bucket).
_WINDOW_BATCHES = 64
_WINDOW_SEQUENCES = 4096


def _prefixes(paths: Union[_PathLike, Sequence[_PathLike]]) -> list[str]:
    """The store prefixes that ``paths`` names: a prefix, a list of them, or a directory (every
    store in it, in order of name)."""
    if isinstance(paths, (str, os.PathLike)):
        path = os.fspath(paths)
        if os.path.isdir(path):
            found = sorted(name[:-4] for name in os.listdir(path) if name.endswith(".idx"))
            if not found:
                raise _native.InputError(f"stoke_loader: no token store (.idx) in {path}")
            return [os.path.join(path, name) for name in found]
        return [path]
    return [os.fspath(p) for p in paths]


class TokenStore:
    """Token stores as one source of sequences, read in place: a prefix (``corpus`` names
    ``corpus.bin`` and ``corpus.idx``), a list of prefixes (shards, in order) or a directory
    of stores; or through stoke's byte stores, named by URLs (see :func:`token_store`).
    Integer tokens of at most 32 bits (uint16 for GPT-2's vocabulary); a missing or corrupt
    file or object raises :class:`InputError` naming it and the byte offset."""

    def __init__(self, paths: Union[_PathLike, Sequence[_PathLike]], *,
                 cache: Optional[_PathLike] = None, cache_bytes: Optional[int] = None,
                 resident: Optional[int] = None, io_threads: int = 1):
        if _stored.is_url(paths):
            urls = _stored.checked_urls(paths, cache, cache_bytes, "token_store()")
            self._native = _native.stored_token_source(
                urls, int(resident or 0), int(io_threads),
                os.fspath(cache) if cache is not None else "", int(cache_bytes or 0))
            self.prefixes = list(self._native.prefixes)
            return
        if cache is not None:
            raise UsageError("stoke_loader: token_store() reads local files in place: cache "
                             "and cache_bytes apply to URLs (s3://, http(s)://, file://)")
        self.prefixes = _prefixes(paths)
        self._native = _native.TokenSource(self.prefixes, int(resident or 2), int(io_threads))

    def __len__(self) -> int:
        """Sequences of all stores."""
        return len(self._native)

    @property
    def token_count(self) -> int:
        """Tokens of all sequences."""
        return self._native.token_count

    @property
    def dtype(self) -> str:
        """The stores' token type (``uint16``, ...)."""
        return self._native.dtype

    def lengths(self):
        """Every sequence's length, from the indexes (a NumPy int64 array)."""
        import numpy as np

        return np.asarray(self._native.lengths(), dtype=np.int64)

    def __getitem__(self, index: int):
        """The tokens of sequence ``index`` (a NumPy int32 array, a copy)."""
        import numpy as np

        return np.asarray(self._native.get(index), dtype=np.int32)

    def __repr__(self) -> str:
        return (f"stoke_loader.TokenStore(stores={len(self.prefixes)}, sequences={len(self)}, "
                f"tokens={self.token_count}, dtype={self.dtype})")


def token_store(paths: Union[_PathLike, Sequence[_PathLike]], *,
                cache: Optional[_PathLike] = None, cache_bytes: Optional[int] = None,
                resident: Optional[int] = None, io_threads: int = 1) -> TokenStore:
    """The :class:`TokenStore` of ``paths``: a prefix, prefixes, or a directory, each store's
    ``.bin`` file mapped when it is read (``resident`` of them at once, default 2).

    URLs: ``paths`` may instead be a URL of token stores, or a list of them, in one store, as
    :func:`shards` takes them: ``s3://bucket/corpus/`` or ``s3://bucket/corpus/part-*.idx``
    (a prefix ending in ``/`` or a glob: the stores of every ``.idx`` key it lists, in order of
    name), ``s3://bucket/corpus/part-000`` (one store: its ``.idx`` and ``.bin``; naming
    either is the same), ``http(s)://host/corpus/part-000`` (name each store) or
    ``file:///data/corpus/``. They are read by stoke's ``StoredTokenStore``, with the same
    sequences in the same order as the same files read locally, and go wherever a local token
    store does (:func:`padded`, :func:`packed`, :func:`bucketed`, :func:`mixture`). Opening
    reads every index (small) and checks it; each ``.bin`` object is fetched whole, once a
    loader is made over the stores, by ``io_threads`` threads in the order of the stores.
    ``resident``: the ``.bin`` objects kept in memory (default: all of them; a plan reads the
    documents of every store in an order across them, so a store let go is fetched again when
    a later document needs it). ``cache`` and ``cache_bytes``: a node cache in that folder,
    bounded, shared by every process of the node (each object fetched once per node).
    Credentials come from the standard AWS variables and files. A missing object raises
    :class:`InputError` naming its URL; a corrupt index, or one of another token type, names
    its URL and the byte offset; a build without libcurl raises :class:`NotBuiltError` for
    ``http(s)://`` and ``s3://``."""
    return TokenStore(paths, cache=cache, cache_bytes=cache_bytes, resident=resident,
                      io_threads=io_threads)


class Mixture:
    """A weighted blend of token sources, usable wherever a token source is (:func:`padded`,
    :func:`packed`, :func:`bucketed`): made by :func:`mixture`. The epoch's documents are its
    picks, in a deterministic interleaving (the source furthest behind its share next), so every
    prefix of the epoch is within one sample per source of the weights (by ``unit="tokens"``,
    within one document's tokens); each source's documents in its own shuffled order. A batch's
    ``documents`` index the sources one after another (:meth:`source_of` names the source)."""

    def __init__(self, sources, weights, *, unit: str, schedule, exhaustion: str,
                 samples_per_epoch: Optional[int], shuffle: bool, seed: Optional[int]):
        self.sources = [s if isinstance(s, TokenStore) else TokenStore(s) for s in sources]
        self.weights = [int(w) for w in weights]
        self.unit = unit
        self.schedule = [(int(first), [int(w) for w in phase]) for first, phase in schedule]
        self.exhaustion = exhaustion
        if samples_per_epoch is None:
            samples_per_epoch = 0 if exhaustion == "stop" else sum(len(s) for s in self.sources)
        self.samples_per_epoch = int(samples_per_epoch)
        self.shuffle = shuffle
        self.seed = seed
        self._native = _native.concat_token_sources([s._native for s in self.sources])

    def __len__(self) -> int:
        """Documents of all sources (the loader's dataset: the sources one after another)."""
        return len(self._native)

    def source_of(self, document: int) -> tuple[int, int]:
        """Which source a batch's ``documents`` entry is from, and its index there."""
        for i, source in enumerate(self.sources):
            if document < len(source):
                return i, document
            document -= len(source)
        raise IndexError(f"stoke_loader: document past the mixture's {len(self)} documents")

    def __repr__(self) -> str:
        return (f"stoke_loader.Mixture(sources={len(self.sources)}, weights={self.weights}, "
                f"unit={self.unit!r}, exhaustion={self.exhaustion!r}, "
                f"samples_per_epoch={self.samples_per_epoch})")


def mixture(sources: Sequence, *, unit: str = "samples", schedule: Sequence = (),
            exhaustion: str = "error", samples_per_epoch: Optional[int] = None,
            shuffle: bool = True, seed: Optional[int] = None) -> Mixture:
    """A :class:`Mixture` of ``sources``, pairs ``(source, weight)`` (a :class:`TokenStore` or
    what :func:`token_store` takes; integer weights, relative). ``unit``: what the weights share
    out, ``"samples"`` or ``"tokens"``. ``schedule``: later weights, pairs ``(from_pick,
    [weight per source])`` in ascending order (a training step of B samples begins at pick
    step x B of its epoch; 0 pauses a source). ``exhaustion``: when a source has given all its
    documents, ``"error"`` (the loader raises :class:`DataError` naming the source, epoch and
    pick), ``"wrap"`` (another pass, in a new order) or ``"stop"`` (the epoch ends).
    ``samples_per_epoch``: picks an epoch (default: every source's documents together; with
    ``"stop"``, until a source runs out). ``shuffle`` and ``seed``: whether each source is
    shuffled, and the key of its orders (default: the loader's ``seed``); the mixture orders the
    loader's documents, so the loader's own ``shuffle`` is not used. The loader's ``state_dict`` holds the mixture's parameters and each source's
    documents and tokens delivered; ``load_state_dict`` refuses a state of other weights,
    schedule, sources or seed, naming what changed."""
    pairs = list(sources)
    if not pairs or any(len(pair) != 2 for pair in pairs):
        raise ValueError("stoke_loader: mixture takes a non-empty list of (source, weight) pairs")
    if unit not in ("samples", "tokens"):
        raise ValueError(f"stoke_loader: unit is 'samples' or 'tokens', not {unit!r}")
    if exhaustion not in ("error", "wrap", "stop"):
        raise ValueError("stoke_loader: exhaustion is 'error', 'wrap' or 'stop', not "
                         f"{exhaustion!r}")
    return Mixture([source for source, _ in pairs], [weight for _, weight in pairs], unit=unit,
                   schedule=schedule, exhaustion=exhaustion, samples_per_epoch=samples_per_epoch,
                   shuffle=shuffle, seed=seed)


def _make_loader(source, kind: str, *, sequence_length: int = 0, rows: int = 1,
                 shifted: bool = False, budget: int = 0, attention_cost: bool = False,
                 multiple: int = 1, buckets: int = 4, oversize: str = "split",
                 window: Optional[int] = None, shuffle: bool = True, seed: int = 0,
                 pad_id: int = 0, num_workers: int = 1, queue_depth: int = 2,
                 remainder: str = "pad", batch_timeout: Optional[float] = None,
                 max_held_batches: Optional[int] = DEFAULT_MAX_HELD_BATCHES) -> SequenceLoader:
    if not isinstance(source, (TokenStore, Mixture)):
        source = TokenStore(source)
    if oversize not in ("split", "refuse"):
        raise ValueError(f"stoke_loader: oversize is 'split' or 'refuse', not {oversize!r}")
    if window is None:
        window = _WINDOW_BATCHES if kind in ("concat", "pad") else _WINDOW_SEQUENCES
    if max_held_batches is not None and max_held_batches < 1:
        raise ValueError("stoke_loader: max_held_batches must be a positive int or None")
    if isinstance(source, Mixture):
        planner = _native.mixture_planner(
            [s._native for s in source.sources], source.weights, source.unit, source.exhaustion,
            source.samples_per_epoch, source.shuffle, seed if source.seed is None else source.seed,
            source.schedule, kind, sequence_length, rows, shifted, window, seed, budget,
            attention_cost, multiple, buckets, oversize == "split")
    else:
        planner = _native.sequence_planner(source._native, kind, sequence_length, rows, shifted,
                                           window, shuffle, seed, budget, attention_cost,
                                           multiple, buckets, oversize == "split")
    native = _native.SequenceLoader(source._native, planner, pad_id, num_workers, queue_depth,
                                    remainder, 0.0 if batch_timeout is None else batch_timeout,
                                    max_held_batches or 0)
    loader = SequenceLoader._wrap(native, None)
    loader.source = source
    return loader


def padded(source, batch_size: int, *, multiple: int = 1, **options) -> SequenceLoader:
    """Batches of ``batch_size`` whole sequences (one a row), each as wide as its longest
    rounded up to ``multiple``; ``mask`` marks the real tokens (a token equal to ``pad_id`` is
    still real). ``options``: ``shuffle``, ``seed``, ``pad_id``, ``window`` (batches per plan
    window), ``num_workers``, ``queue_depth``, ``remainder`` (``"pad"`` or ``"drop"``: what
    evens out ``split``/``share``), ``batch_timeout``, ``max_held_batches``."""
    return _make_loader(source, "pad", rows=batch_size, multiple=multiple, **options)


def packed(source, sequence_length: int, rows: int = 1, *, method: str = "concat",
           shifted: bool = False, oversize: str = "split", **options) -> SequenceLoader:
    """Batches of ``rows`` rows of ``sequence_length`` token slots. ``method``: ``"concat"``
    (the epoch's sequences concatenated, then cut: every token the input of one row; with
    ``shifted`` each row has ``sequence_length + 1`` slots, its last the next row's first),
    ``"first_fit"`` or ``"best_fit"`` (whole sequences; one longer than a row is cut, or
    refused with ``oversize="refuse"``). ``options`` as for :func:`padded`; ``window`` counts
    batches (concat) or sequences (fit)."""
    if method not in ("concat", "first_fit", "best_fit"):
        raise ValueError("stoke_loader: method is 'concat', 'first_fit' or 'best_fit', not "
                         f"{method!r}")
    return _make_loader(source, method, sequence_length=sequence_length, rows=rows,
                        shifted=shifted, oversize=oversize, **options)


def bucketed(source, budget: int, *, cost: str = "tokens", buckets: int = 4, multiple: int = 1,
             **options) -> SequenceLoader:
    """Batches of sequences of like length (``buckets`` buckets, bounds estimated from the
    lengths), each costing at most ``budget``: rows x width token slots, padding included
    (``cost="tokens"``), or rows x width x width (``cost="attention"``). ``options`` as for
    :func:`padded`; ``window`` counts sequences."""
    if cost not in ("tokens", "attention"):
        raise ValueError(f"stoke_loader: cost is 'tokens' or 'attention', not {cost!r}")
    return _make_loader(source, "bucket", budget=budget, attention_cost=cost == "attention",
                        buckets=buckets, multiple=multiple, **options)


__all__ = ["SequenceBatch", "TokenStore", "token_store", "padded", "packed", "bucketed",
           "Mixture", "mixture"]

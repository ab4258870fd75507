#!/usr/bin/env python3
"""The sequence peers of stoke (#37), each at the idiom an expert would pick, on the token
stores that bench/sequence_bench reads (Megatron's .bin + .idx, int32 tokens) and the same
sequence length S, rows a batch and token budget T.

- megatron: Megatron-Core's GPTDataset (concatenate-then-split, S + 1 tokens a sample) through
  BlendedMegatronDatasetBuilder with its index cache (path_to_cache), read by a torch
  DataLoader with 2 workers, as Megatron's training loop does; timed with an empty cache (the
  index build) and again with the cache built. Its BlendedDataset (weights 5:3:2) for the
  mixture's deviation.
- grain-first-fit, grain-concat: Grain's FirstFitPackIterDataset (documents cut into pieces of
  at most S first, so that no token is truncated) and ConcatThenSplitIterDataset over a shuffled
  MapDataset, batched, with mp_prefetch on 2 worker processes; grain-mix: MapDataset.mix.
- torchtune: torchtune's PackedDataset (split_across_pack=True, documents cut across rows: with
  False a document longer than S is an error, and most of the real corpus's are), which packs
  the whole corpus in its constructor, read by a torch DataLoader with 2 workers.
- litdata: litdata.optimize into its chunked format with TokensLoader (the conversion is the
  index build), then StreamingDataset(item_loader=TokensLoader(block_size=S + 1), shuffle=True)
  through StreamingDataLoader with 2 workers.
- tf.data: Dataset.bucket_by_sequence_length over the documents, bucket boundaries from the
  lengths' quantiles and batch sizes from the budget T (as many rows of a bucket's width as fit
  in T), from_generator over the memory-mapped store, prefetch(AUTOTUNE).

For each peer and store it prints one line: `peer NAME CORPUS: first batch X ms (index build
included), Y M tokens/s, padding Z`, or `peer NAME CORPUS: cannot: WHY` where the peer cannot
run there (a package that would not install, a limit of memory or disk, named with its figure).
Real tokens per second count the tokens that are not padding, over --tokens tokens at most or
--seconds seconds, whichever ends first. bench/sequences/setup_peers.sh installs the peers.
"""
from __future__ import annotations

import argparse
import contextlib
import importlib
import multiprocessing
import os
import shutil
import struct
import sys
import tempfile
import time
import traceback

import numpy as np

DTYPES = {1: np.uint8, 2: np.int8, 3: np.int16, 4: np.int32, 5: np.int64, 6: np.float64,
          7: np.float32, 8: np.uint16}
END_OF_TEXT = 50256  # GPT-2's <|endoftext|>, the real corpus's document end
PAD = -1  # the peers' padding id: no real token has it


class Store:
    """A Megatron token store read in place with numpy (lengths, pointers, tokens)."""

    def __init__(self, prefix: str):
        self.prefix = prefix
        index = np.memmap(prefix + ".idx", mode="r", dtype=np.uint8)
        if bytes(index[:9]) != b"MMIDIDX\x00\x00":
            raise SystemExit(f"peers: {prefix}.idx at byte offset 0: not a Megatron index")
        _, code, count, _ = struct.unpack("<QBQQ", bytes(index[9:34]))
        self.dtype = np.dtype(DTYPES[code])
        self.lengths = np.frombuffer(index, np.int32, count, 34)
        self.pointers = np.frombuffer(index, np.int64, count, 34 + 4 * count)
        self.tokens = np.memmap(prefix + ".bin", mode="r", dtype=self.dtype)
        self.total = int(self.lengths.sum(dtype=np.int64))

    def __reduce__(self):
        # Worker processes reopen the store: pickled, its memmaps would copy the whole corpus.
        return Store, (self.prefix,)

    def __len__(self) -> int:
        return len(self.lengths)

    def document(self, i: int) -> np.ndarray:
        start = int(self.pointers[i]) // self.dtype.itemsize
        return self.tokens[start:start + int(self.lengths[i])]


def now_ms(start: float) -> float:
    return (time.perf_counter() - start) * 1000.0


def bucket_boundaries(lengths: np.ndarray, buckets: int) -> list[int]:
    """Quantiles of the lengths, as stoke's estimate_bucket_boundaries takes them."""
    stride = len(lengths) // 65536 + 1
    seen = np.sort(lengths[::stride])
    out: list[int] = []
    for k in range(1, buckets):
        value = int(seen[k * (len(seen) - 1) // buckets])
        if not out or out[-1] < value:
            out.append(value)
    return out


def measure(make_iterator, count_batch, args) -> tuple[float, float, float]:
    """Times `make_iterator()` (index builds and all) to its first batch, then reads batches
    until args.tokens real tokens or args.seconds. `count_batch(batch)` gives (real tokens,
    slots). Returns (first batch ms, real tokens/s after the first batch, padding fraction)."""
    start = time.perf_counter()
    iterator = make_iterator()
    first = next(iterator)
    first_ms = now_ms(start)
    tokens, slots = count_batch(first)
    start = time.perf_counter()
    read = 0
    for batch in iterator:
        real, all_slots = count_batch(batch)
        read += real
        tokens += real
        slots += all_slots
        if read >= args.tokens or time.perf_counter() - start >= args.seconds:
            break
    seconds = time.perf_counter() - start
    return first_ms, read / seconds if seconds > 0 else 0.0, 1.0 - tokens / max(slots, 1)


# --- Megatron-Core -------------------------------------------------------------------------------

class MegatronTokenizer:
    """What GPTDataset asks of a tokenizer: the end-of-document and padding ids."""

    eod = END_OF_TEXT
    pad = PAD
    vocab_size = 50257
    unique_identifiers = {"class": "stoke-sequence-bench", "eod": END_OF_TEXT, "pad": PAD}


def megatron_config(prefixes, weights, args, cache):
    from megatron.core.datasets.gpt_dataset import GPTDatasetConfig

    return GPTDatasetConfig(
        random_seed=args.seed, sequence_length=args.sequence_length,
        blend=(prefixes, weights), split="100,0,0", path_to_cache=cache,
        tokenizer=MegatronTokenizer(), reset_position_ids=True, reset_attention_mask=True,
        eod_mask_loss=True, create_attention_mask=False)


def megatron_dataset(prefixes, weights, samples, args, cache):
    from megatron.core.datasets.blended_megatron_dataset_builder import \
        BlendedMegatronDatasetBuilder
    from megatron.core.datasets.gpt_dataset import GPTDataset

    config = megatron_config(prefixes, weights, args, cache)
    return BlendedMegatronDatasetBuilder(GPTDataset, [samples, 0, 0], lambda: True,
                                         config).build()[0]


def torch_batches(dataset, args, collate=None):
    import torch

    loader = torch.utils.data.DataLoader(dataset, batch_size=args.rows, num_workers=args.workers,
                                         collate_fn=collate, persistent_workers=False,
                                         prefetch_factor=4 if args.workers else None)
    return iter(loader)


def megatron(store: Store, args, cache_root: str) -> list[str]:
    samples = store.total // args.sequence_length
    cache = tempfile.mkdtemp(dir=cache_root, prefix="megatron-")
    lines = []

    def count(batch):
        # Every sample is S tokens of the concatenated stream: no padding (Megatron wraps into
        # the next epoch rather than pad the last sample).
        return batch["tokens"].numel(), batch["tokens"].numel()

    for label in ("empty cache, the index build", "cache built"):
        first_ms, per_second, padding = measure(
            lambda: torch_batches(megatron_dataset([store.prefix], None, samples, args, cache),
                                  args), count, args)
        lines.append(f"first batch {first_ms:.1f} ms ({label}), {per_second / 1e6:.1f} M "
                     f"tokens/s, padding {padding:.4f}")
    shutil.rmtree(cache, ignore_errors=True)
    return lines


def megatron_mixture(stores: list[Store], args, cache_root: str) -> str:
    import torch.distributed as dist

    cache = tempfile.mkdtemp(dir=cache_root, prefix="megatron-mix-")
    if not dist.is_initialized():  # BlendedDataset asks for its rank: one process, rank 0
        dist.init_process_group("gloo", init_method=f"file://{cache}/process-group", rank=0,
                                world_size=1)
    weights = [5.0, 3.0, 2.0][:len(stores)]
    blended = megatron_dataset([s.prefix for s in stores], weights, args.mixture_picks, args,
                               cache)
    shutil.rmtree(cache, ignore_errors=True)
    if not hasattr(blended, "dataset_index"):
        return "cannot: one source gives no BlendedDataset"
    return deviation_line(np.asarray(blended.dataset_index[:args.mixture_picks]), weights)


def deviation_line(sources: np.ndarray, weights: list[float]) -> str:
    """The largest deviation of any source from its weight's share, at every 1% of the picks
    and at every pick, in samples."""
    counts = np.zeros((len(sources), len(weights)))
    counts[np.arange(len(sources)), sources.astype(np.int64)] = 1
    counts = np.cumsum(counts, axis=0)
    picks = np.arange(1, len(sources) + 1)[:, None]
    share = np.asarray(weights)[None, :] / sum(weights) * picks
    deviation = np.abs(counts - share).max(axis=1)
    percent = [min(len(sources), -(-k * len(sources) // 100)) - 1 for k in range(1, 101)]
    return (f"mixture of {len(weights)} sources (weights 5:3:2), {len(sources)} picks: largest "
            f"deviation {deviation[percent].max():.3f} samples at every 1%, "
            f"{deviation.max():.3f} at every pick")


# --- Grain ---------------------------------------------------------------------------------------

def chunk_index(store: Store, size: int) -> tuple[np.ndarray, np.ndarray]:
    """(document, first token) of every piece of at most `size` tokens of every document."""
    pieces = -(-store.lengths.astype(np.int64) // size)
    documents = np.repeat(np.arange(len(store), dtype=np.int64), pieces)
    first = np.arange(len(documents), dtype=np.int64) - np.repeat(np.cumsum(pieces) - pieces,
                                                                  pieces)
    return documents, first * size


class Pieces:
    """A random-access source of pieces of documents (for Grain's MapDataset.source)."""

    def __init__(self, store: Store, size: int):
        self.store, self.size = store, size
        self.documents, self.firsts = chunk_index(store, size)

    def __len__(self):
        return len(self.documents)

    def __getitem__(self, i):
        document = self.store.document(int(self.documents[i]))
        first = int(self.firsts[i])
        return {"inputs": np.asarray(document[first:first + self.size], dtype=np.int32)}


class Documents:
    """A random-access source of whole documents."""

    def __init__(self, store: Store):
        self.store = store

    def __len__(self):
        return len(self.store)

    def __getitem__(self, i):
        return {"inputs": np.asarray(self.store.document(i), dtype=np.int32)}


def grain_packed(store: Store, args, way: str):
    import grain
    from grain.experimental import ConcatThenSplitIterDataset, FirstFitPackIterDataset

    if way == "first-fit":
        source = grain.MapDataset.source(Pieces(store, args.sequence_length))
    else:
        source = grain.MapDataset.source(Documents(store))
    dataset = source.shuffle(seed=args.seed).to_iter_dataset()
    length = {"inputs": args.sequence_length}
    if way == "first-fit":
        dataset = FirstFitPackIterDataset(dataset, length_struct=length,
                                          num_packing_bins=args.rows, seed=args.seed,
                                          padding_struct={"inputs": PAD})
    else:
        dataset = ConcatThenSplitIterDataset(dataset, length_struct=length)
    dataset = dataset.batch(args.rows)
    if args.workers:
        dataset = dataset.mp_prefetch(grain.MultiprocessingOptions(num_workers=args.workers))
    return iter(dataset)


def grain_count(batch):
    segments = batch.get("inputs_segment_ids")
    inputs = batch["inputs"]
    if segments is not None:
        return int((segments > 0).sum()), inputs.size
    return int((inputs != PAD).sum()), inputs.size


def grain_mixture(stores: list[Store], args) -> str:
    import grain

    weights = [5.0, 3.0, 2.0][:len(stores)]
    sources = [grain.MapDataset.source(Documents(s)).shuffle(seed=args.seed).repeat()
               .map(lambda item, k=k: k) for k, s in enumerate(stores)]
    mixed = grain.MapDataset.mix(sources, weights)
    picks = np.fromiter((mixed[i] for i in range(args.mixture_picks)), dtype=np.int64,
                        count=args.mixture_picks)
    return deviation_line(picks, weights)


# --- torchtune -----------------------------------------------------------------------------------

class TorchtuneSource(Documents):
    """Documents as torchtune's datasets give them: {"tokens": list, "labels": list}."""

    def __getitem__(self, i):
        tokens = self.store.document(i).tolist()
        return {"tokens": tokens, "labels": tokens}


def torchtune_batches(store: Store, args):
    import torch
    from torchtune.datasets import PackedDataset

    packed = PackedDataset(TorchtuneSource(store), max_seq_len=args.sequence_length,
                           padding_idx=PAD, split_across_pack=True)

    def collate(items):
        return {"tokens": torch.stack([item["tokens"] for item in items]),
                "seq_lens": [item["seq_lens"] for item in items]}

    return torch_batches(packed, args, collate)


def torchtune_count(batch):
    tokens = batch["tokens"]
    return int((tokens != PAD).sum()), tokens.numel()


# --- litdata -------------------------------------------------------------------------------------

def litdata_write(prefix_and_range):
    prefix, first, last = prefix_and_range
    import torch

    store = Store(prefix)
    for i in range(first, last):
        yield torch.from_numpy(np.asarray(store.document(i), dtype=np.int32))


def litdata_batches(store: Store, args, out_dir: str):
    import litdata
    from litdata.streaming.item_loader import TokensLoader

    step = max(1, -(-len(store) // 64))
    inputs = [(store.prefix, first, min(first + step, len(store)))
              for first in range(0, len(store), step)]
    litdata.optimize(fn=litdata_write, inputs=inputs, output_dir=out_dir, chunk_bytes="64MB",
                     item_loader=TokensLoader(), num_workers=args.workers or 1)
    dataset = litdata.StreamingDataset(out_dir, item_loader=TokensLoader(
        block_size=args.sequence_length + 1), shuffle=True, seed=args.seed)
    return iter(litdata.StreamingDataLoader(dataset, batch_size=args.rows,
                                            num_workers=args.workers))


def litdata_count(batch):
    return batch.numel(), batch.numel()


# --- tf.data -------------------------------------------------------------------------------------

def tf_batches(store: Store, args):
    import tensorflow as tf

    boundaries = bucket_boundaries(store.lengths, args.buckets)
    widths = boundaries + [int(store.lengths.max())]
    batch_sizes = [max(1, args.budget // width) for width in widths]
    order = np.random.default_rng(args.seed).permutation(len(store))

    def documents():
        for i in order:
            yield np.asarray(store.document(int(i)), dtype=np.int32)

    dataset = tf.data.Dataset.from_generator(
        documents, output_signature=tf.TensorSpec(shape=[None], dtype=tf.int32))
    dataset = dataset.bucket_by_sequence_length(
        lambda tokens: tf.shape(tokens)[0], [b + 1 for b in boundaries], batch_sizes,
        padding_values=PAD, drop_remainder=False)
    return iter(dataset.prefetch(tf.data.AUTOTUNE))


def tf_count(batch):
    values = batch.numpy()
    return int((values != PAD).sum()), values.size


# --- main ----------------------------------------------------------------------------------------

IMPORTS = {
    "megatron": ["torch", "megatron.core.datasets.blended_megatron_dataset_builder",
                 "megatron.core.datasets.gpt_dataset"],
    "grain": ["grain", "grain.experimental"],
    "tf.data": ["tensorflow"],
    "torchtune": ["torch", "torchtune.datasets"],
    "litdata": ["torch", "litdata", "litdata.streaming.item_loader"],
}
"""The modules of each peer, imported before its clock starts (an import is no index build)."""


@contextlib.contextmanager
def stdout_to_stderr():
    """Sends what this process and its children print to stdout to stderr meanwhile (litdata
    prints its progress there), so that stdout holds the figures only."""
    sys.stdout.flush()
    saved = os.dup(1)
    os.dup2(2, 1)
    try:
        yield
    finally:
        sys.stdout.flush()
        os.dup2(saved, 1)
        os.close(saved)


def run_peer(name, corpus, work):
    """Runs `work()` (a line or lines), printing them, or why the peer cannot run here."""
    try:
        with stdout_to_stderr():
            for module in IMPORTS.get(name.split("-")[0], []):
                importlib.import_module(module)
            lines = work()
    except MemoryError as error:
        where = traceback.extract_tb(error.__traceback__)[-1]
        lines = [f"cannot: out of memory (MemoryError {error} in {os.path.basename(where.filename)}"
                 f":{where.lineno}, {where.name})"]
    except Exception as error:  # noqa: BLE001 - a peer's failure is reported, not fatal
        traceback.print_exc(file=sys.stderr)
        lines = [f"cannot: {type(error).__name__}: {str(error).splitlines()[0][:200]}"]
    for line in [lines] if isinstance(lines, str) else lines:
        print(f"peer {name} {corpus}: {line}", flush=True)


def simple(measured) -> str:
    first_ms, per_second, padding = measured
    return (f"first batch {first_ms:.1f} ms (index build included), {per_second / 1e6:.1f} M "
            f"tokens/s, padding {padding:.4f}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--real", required=True, help="prefix of the real corpus (int32)")
    parser.add_argument("--large", default=None, help="prefix of the 10B-token store")
    parser.add_argument("--sources", nargs="*", default=[], help="more stores for the mixture")
    parser.add_argument("--sequence-length", type=int, default=2048)
    parser.add_argument("--rows", type=int, default=8)
    parser.add_argument("--budget", type=int, default=65536)
    parser.add_argument("--buckets", type=int, default=8)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--tokens", type=int, default=50_000_000)
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--mixture-picks", type=int, default=100_000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--work-dir", default=None, help="for caches and converted copies")
    parser.add_argument("--peers", nargs="*", default=None, help="only these peers")
    args = parser.parse_args()
    work_dir = args.work_dir or tempfile.mkdtemp(prefix="sequence-peers-")
    os.makedirs(work_dir, exist_ok=True)
    wanted = set(args.peers) if args.peers else None

    def want(name):
        return wanted is None or name in wanted

    real = Store(args.real)
    large = Store(args.large) if args.large else None
    print(f"peers: S = {args.sequence_length}, {args.rows} rows a batch, T = {args.budget}, "
          f"{args.workers} workers; real corpus {real.total} tokens"
          + (f", large {large.total} tokens" if large else ""), flush=True)
    corpora = [("real", real)] + ([("10B", large)] if large else [])
    for corpus, store in corpora:
        if want("megatron"):
            run_peer("megatron", corpus, lambda: megatron(store, args, work_dir))
        for way in ("first-fit", "concat"):
            if want("grain-" + way):
                # With mp_prefetch on the workers (Grain's idiom for Python work per element),
                # and in process (its threads only), which may win on 2 cores.
                for workers in sorted({args.workers, 0}, reverse=True):
                    options = argparse.Namespace(**{**vars(args), "workers": workers})
                    run_peer(f"grain-{way}", f"{corpus} ({workers} worker processes)",
                             lambda: simple(measure(lambda: grain_packed(store, options, way),
                                                    grain_count, options)))
        if want("tf.data"):
            run_peer("tf.data", corpus, lambda: simple(measure(
                lambda: tf_batches(store, args), tf_count, args)))
        if want("torchtune"):
            if corpus == "real":
                run_peer("torchtune", corpus, lambda: simple(measure(
                    lambda: torchtune_batches(store, args), torchtune_count, args)))
            else:
                # PackedDataset packs every document into Python lists in its constructor.
                need = store.total * 8 * 2 / 2**30
                run_peer("torchtune", corpus, lambda: (
                    f"cannot: PackedDataset packs the whole corpus in its constructor into "
                    f"Python lists and tensors of it (at least {need:.0f} GiB for "
                    f"{store.total} tokens as int64 tokens and labels, on a machine of "
                    f"{os.sysconf('SC_PHYS_PAGES') * os.sysconf('SC_PAGE_SIZE') / 2**30:.0f} GiB)"))
    # litdata last: it sets multiprocessing's start method to spawn for the whole process.
    for corpus, store in corpora:
        if want("litdata"):
            if corpus == "real":
                out = os.path.join(work_dir, "litdata-real")
                shutil.rmtree(out, ignore_errors=True)
                run_peer("litdata", corpus, lambda: simple(measure(
                    lambda: litdata_batches(store, args, out), litdata_count, args)))
                shutil.rmtree(out, ignore_errors=True)
            else:
                free = shutil.disk_usage(work_dir).free / 2**30
                run_peer("litdata", corpus, lambda: (
                    f"cannot: litdata.optimize writes a copy of the corpus in its own format "
                    f"({store.total * 4 / 2**30:.0f} GiB of int32 tokens; {free:.0f} GiB free "
                    f"on the disk, shared), and its conversion is the index build"))
    multiprocessing.set_start_method("fork", force=True)
    sources = [real] + [Store(p) for p in args.sources]
    if want("megatron") and len(sources) > 1:
        run_peer("megatron-blend", "mixture", lambda: megatron_mixture(sources, args, work_dir))
    if want("grain-mix") and len(sources) > 1:
        run_peer("grain-mix", "mixture", lambda: grain_mixture(sources, args))
    if not args.work_dir:
        shutil.rmtree(work_dir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

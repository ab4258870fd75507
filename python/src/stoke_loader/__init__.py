"""stoke's data loaders for Python.

The distribution is called ``stoke-loader`` and imports as ``stoke_loader`` (the PyPI name
``stoke`` belongs to an unrelated PyTorch wrapper)::

    import numpy as np
    import stoke_loader as sl

    loader = sl.Loader({"x": images, "y": labels}, batch_size=64, shuffle=True, seed=42,
                       num_workers=2)
    for batch in loader:                      # each pass is the next epoch, in a new order
        x = np.from_dlpack(batch["x"])        # or torch.from_dlpack: no copy
        y = np.from_dlpack(batch["y"])

Sources: NumPy arrays, :func:`records`, :func:`npy` and :func:`npz` files read in place,
:func:`shards` (directories or lists of ``.npy``/``.npz``/HDF5 files), :func:`hdf5` variables
(HDF5, NetCDF-4), and :func:`image_folder` / :func:`tar_shards` decoded and augmented by stoke.
:func:`shards`, :func:`records`, :func:`tar_shards` and :func:`token_store` also take URLs
(``s3://``, ``http(s)://``, ``file://``), read through stoke's byte stores.

What stoke guarantees, in Python as in C++:

- the epoch order is a pure function of (seed, epoch), and every ``for`` over the loader
  begins the next epoch: a forgotten ``set_epoch`` cannot freeze the order;
- ``split(devices)`` and ``share(count, index)`` give every device or rank the same number of
  batches, disjoint, together covering the epoch; the remainder is dropped or padded (by
  wrapping around), and every batch says how many of its rows are padding (``batch.padding``,
  ``batch.mask``);
- worker threads never change which sample goes where;
- ``state_dict()`` (the loader state JSON, three numbers and what ``load_state_dict`` checks)
  resumes an epoch exactly, also onto another number of devices or ranks.
"""

from __future__ import annotations

import collections.abc as _abc
import json as _json
import os as _os
from typing import Any, Callable, Iterable, Iterator, Mapping, Optional, Sequence, Union

import numpy as _np

from . import _native
from ._native import (
    Array,
    Batch,
    BatchTimeoutError,
    DataError,
    HeldBatchesError,
    InputError,
    StateError,
    StokeError,
    UsageError,
)
from ._images import Images, image_folder, tar_shards
from ._sources import Hdf5Column, NotBuiltError, ShardedColumn, hdf5, npy, npz, shards
from ._stored import StoredColumn

__all__ = [
    "Loader",
    "Batch",
    "Array",
    "Records",
    "records",
    "scaled",
    "Scaled",
    "npy",
    "npz",
    "shards",
    "ShardedColumn",
    "StoredColumn",
    "hdf5",
    "Hdf5Column",
    "image_folder",
    "tar_shards",
    "Images",
    "HeldBatchesError",
    "NotBuiltError",
    "DEFAULT_MAX_HELD_BATCHES",
    "StokeError",
    "UsageError",
    "StateError",
    "InputError",
    "DataError",
    "BatchTimeoutError",
]
__version__ = "0.1.0"

_abc.Mapping.register(Batch)

# NumPy dtype kinds and their DLPack type codes (kDLInt, kDLUInt, kDLFloat, kDLComplex, kDLBool).
_DLPACK_CODES = {"i": 0, "u": 1, "f": 2, "c": 5, "b": 6}


def _check_dtype(name: str, dtype: _np.dtype) -> tuple[int, int]:
    """The DLPack (code, bits) of a column's dtype; refuses what DLPack cannot carry."""
    dtype = _np.dtype(dtype)
    code = _DLPACK_CODES.get(dtype.kind)
    if code is None or dtype.fields is not None or dtype.subdtype is not None:
        raise TypeError(
            f"stoke_loader: column {name!r} has dtype {dtype}; stoke batches numbers "
            "(bool, signed and unsigned integers, floats, complex)"
        )
    if dtype.byteorder not in ("=", "|") and dtype.byteorder != _native_byteorder():
        raise TypeError(
            f"stoke_loader: column {name!r} has dtype {dtype} of non-native byte order; "
            "convert it with arr.astype(arr.dtype.newbyteorder('='))"
        )
    return code, dtype.itemsize * 8


def _native_byteorder() -> str:
    import sys

    return "<" if sys.byteorder == "little" else ">"


class Records:
    """Fixed-size records stored back to back in a file, one row each: a column that reads the
    file in place (memory-mapped, the default) or with ``pread`` (``access="read"``: a file
    that shrinks while it is read raises an error naming the file and offset instead of
    ending the process with SIGBUS). Made by :func:`records`."""

    def __init__(self, path: Union[str, _os.PathLike], dtype, shape: Sequence[int] = (),
                 access: str = "map"):
        if access not in ("map", "read"):
            raise ValueError(f"stoke_loader: access must be 'map' or 'read', not {access!r}")
        self.path = _os.fspath(path)
        self.dtype = _np.dtype(dtype)
        self.shape = tuple(int(d) for d in shape)
        if any(d < 0 for d in self.shape):
            raise ValueError(f"stoke_loader: record shape {self.shape} has a negative extent")
        self.access = access

    def _column(self, name: str):
        code, bits = _check_dtype(name, self.dtype)
        return _native.RecordColumn(name, self.path, code, bits, list(self.shape),
                                    self.access == "read")

    def __repr__(self) -> str:
        return (f"stoke_loader.records({self.path!r}, dtype={self.dtype}, shape={self.shape}, "
                f"access={self.access!r})")


def records(source: Union[str, _os.PathLike, Sequence[str]], dtype, shape: Sequence[int] = (),
            *, access: Optional[str] = None, cache: Optional[Union[str, _os.PathLike]] = None,
            cache_bytes: Optional[int] = None, resident: Optional[int] = None,
            io_threads: int = 1) -> Union[Records, StoredColumn]:
    """A column of fixed-size records of ``dtype`` and ``shape`` read from the file ``source``.

    The file holds ``n * itemsize * prod(shape)`` bytes and no header (for a ``.npy`` file,
    pass ``numpy.load(path, mmap_mode="r")`` to the loader instead: a memory-mapped array is
    read in place too). ``access``: ``"map"`` (the default) or ``"read"`` (see
    :class:`Records`).

    URLs: ``source`` may instead be a URL of record objects, or a list of them, in one store:
    ``s3://bucket/train/*.bin`` (a glob, a prefix ending in ``/``, or one object),
    ``http(s)://host/path/a.bin`` (HTTP has no listing: name each object) or
    ``file:///data/a.bin``. Their records follow one another, in the order of the URLs (a
    listing's objects sorted by key), as those of the same files read locally one after
    another. The result is a :class:`StoredColumn` read by stoke's ``ShardedArrays`` through
    the store, each object a shard: opening asks the store for each object's size (a stat,
    which reads none of it), and an object is fetched whole when the epoch reaches it.
    ``resident`` (default 2) objects stay in memory and ``io_threads`` fetch the epoch's next
    ones ahead; ``cache`` and ``cache_bytes`` read through a node cache, as for
    :func:`shards`. An object whose size is not a whole number of records raises
    :class:`InputError` naming its URL and the sizes; ``http(s)://`` and ``s3://`` URLs raise
    :class:`NotBuiltError` in a build without libcurl."""
    from . import _stored

    if _stored.is_url(source):
        if access is not None:
            raise UsageError("stoke_loader: records() of URLs fetches each object whole: access "
                             "does not apply")
        code, bits = _check_dtype("x", dtype)
        shape = tuple(int(d) for d in shape)
        if any(d < 0 for d in shape):
            raise ValueError(f"stoke_loader: record shape {shape} has a negative extent")
        return _stored.stored_records(source, code, bits, shape, cache=cache,
                                      cache_bytes=cache_bytes, resident=resident,
                                      io_threads=io_threads)
    if cache is not None or cache_bytes is not None or resident is not None or io_threads != 1:
        raise UsageError("stoke_loader: records() reads a local file in place: resident, "
                         "io_threads, cache and cache_bytes apply to URLs (s3://, http(s)://, "
                         "file://)")
    return Records(source, dtype, shape, access or "map")


Column = Union[_np.ndarray, Records, ShardedColumn, StoredColumn, Hdf5Column]

#: The default bound on batches the consumer holds (``Loader(max_held_batches=...)``).
DEFAULT_MAX_HELD_BATCHES = 16


def _columns(data) -> list:
    if isinstance(data, _np.ndarray) or hasattr(data, "_column"):
        data = {"x": data}
    if not isinstance(data, Mapping):
        if hasattr(data, "__dlpack__") or hasattr(data, "__array_interface__"):
            data = {"x": data}
        else:
            raise TypeError(
                "stoke_loader: a loader reads a mapping of names to arrays (or records), or one "
                f"array; got {type(data).__name__}"
            )
    if not data:
        raise ValueError("stoke_loader: a loader needs at least one column")
    columns = []
    for name, value in data.items():
        if not isinstance(name, str):
            raise TypeError(f"stoke_loader: column names are strings, not {name!r}")
        columns.append(_native_column(name, value))
    return columns


def _native_column(name: str, value):
    """The native column named ``name`` over ``value``: a stoke_loader source or an array."""
    if hasattr(value, "_column"):  # records, shards, HDF5, images, scaled: stoke's own sources
        return value._column(name)
    if isinstance(value, _np.ndarray):
        _check_dtype(name, value.dtype)
        if value.ndim == 0:
            raise ValueError(
                f"stoke_loader: column {name!r} is a scalar; a column has rows along axis 0"
            )
    elif not (hasattr(value, "__dlpack__") or hasattr(value, "__array_interface__")):
        raise TypeError(
            f"stoke_loader: column {name!r} is a {type(value).__name__}, not an array "
            "(NumPy, or any CPU array with __dlpack__) or a stoke_loader source "
            "(records, shards, hdf5, image_folder, tar_shards, scaled)"
        )
    return _native.ArrayColumn(name, value)


class Scaled:
    """The rows of ``source`` (an array or a stoke_loader source of numbers) as float32
    ``value * scale + offset``, computed by the loader's workers as they make each batch, as
    stoke's C++ ``cpu::StackBatcher`` does: ``scale=1/255`` turns bytes into [0, 1] without a
    pass of the consumer's own over every batch. Made by :func:`scaled`."""

    def __init__(self, source, scale: float, offset: float = 0.0):
        self.source = source
        self.scale = float(scale)
        self.offset = float(offset)

    def _column(self, name: str):
        inner = _native_column(name, self.source)
        return _native.ScaledColumn(name, inner, self.scale, self.offset)

    def __repr__(self) -> str:
        return f"stoke_loader.scaled({self.source!r}, scale={self.scale}, offset={self.offset})"


def scaled(source, scale: float, offset: float = 0.0) -> Scaled:
    """``source``'s rows as float32 ``value * scale + offset`` (see :class:`Scaled`)."""
    return Scaled(source, scale, offset)


class Loader:
    """Batches of rows of one or more columns, made by worker threads.

    ``data`` is a mapping of names to columns (or a single column, named ``"x"``): NumPy
    arrays (rows along axis 0, read in place: the loader keeps a reference, and does not copy
    the array; changes to it show in later batches) or :func:`records`. Every column has the
    same number of rows.

    - ``batch_size``: rows per batch.
    - ``shuffle`` / ``seed``: a new order every epoch, a pure function of (seed, epoch).
    - ``num_workers``: worker threads (0: batches are made in the thread that iterates).
    - ``queue_depth``: batches made ahead of the consumer (the bound on memory in flight).
    - ``remainder``: ``"partial"`` (a smaller last batch), ``"drop"`` or ``"pad"`` (wrap around
      to the start of the epoch; padded rows are the last ``batch.padding`` of a batch).
      ``drop_last=True`` means ``remainder="drop"``. A loader that will be split needs
      ``"drop"`` or ``"pad"``, so that every device runs the same number of steps.
    - ``batch_timeout``: seconds the consumer waits for one batch before a
      :class:`BatchTimeoutError` names the stuck worker (``None``: no bound; needs workers).
    - ``shuffle_shards``: for a sharded source (:func:`shards`, :func:`tar_shards`), shuffle
      the order of the shards, then the rows within each, so consecutive batches come from
      one shard and the next shards are read ahead (implies ``shuffle``).
    - ``max_held_batches``: the most batches of this loader the consumer may hold at once
      (a batch counts while it, or any array over it, is alive; default
      ``DEFAULT_MAX_HELD_BATCHES``, 16). Asking for one more raises :class:`HeldBatchesError`
      saying how many are held and how to raise the bound; the batch it would have returned
      is kept for the next call. ``None``: no bound (memory then grows with what is held).
      A ``for`` loop's variable still holds the previous batch when the next is asked for, so
      a plain loop needs a bound of 2.
    - ``transform``: a function called on each batch, in the iterating thread with the GIL,
      whose result the loop gets instead of the batch (for what the native augmentations do
      not cover). Its cost is the function's own plus 0.05-0.25 µs a batch (measured).

    Iterating the loader begins the next epoch (``loader.epoch`` says which); ``len(loader)``
    is the number of batches it will yield. The GIL is released while batches are made and
    while the consumer waits for one.

    The worker threads start with the first epoch and end with the loader, or at
    :meth:`close` (also the end of a ``with`` block). Ctrl-C while the consumer waits for a
    batch raises ``KeyboardInterrupt`` within about 10 ms; no batch is lost, and the epoch
    can go on. After ``os.fork`` (a ``multiprocessing`` or ``DataLoader`` worker started with
    the fork method) the child's next epoch starts workers of its own; an epoch begun
    before the fork raises :class:`StateError` there.
    """

    def __init__(self, data: Union[Mapping[str, Column], Column], *, batch_size: int = 1,
                 shuffle: bool = False, seed: int = 0, num_workers: int = 1,
                 queue_depth: int = 2, remainder: str = "partial", drop_last: bool = False,
                 batch_timeout: float | None = None, shuffle_shards: bool = False,
                 max_held_batches: Optional[int] = DEFAULT_MAX_HELD_BATCHES,
                 transform: Optional[Callable[[Batch], Any]] = None):
        if drop_last:
            if remainder not in ("partial", "drop"):
                raise ValueError("stoke_loader: drop_last=True contradicts remainder="
                                 f"{remainder!r}")
            remainder = "drop"
        for name, value in (("batch_size", batch_size), ("num_workers", num_workers),
                            ("queue_depth", queue_depth), ("seed", seed)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise TypeError(f"stoke_loader: {name} must be a non-negative int, not {value!r}")
        if batch_timeout is not None and batch_timeout <= 0:
            raise ValueError("stoke_loader: batch_timeout must be positive seconds or None")
        if batch_timeout is not None and num_workers == 0:
            raise ValueError("stoke_loader: batch_timeout needs num_workers >= 1 (a batch made "
                             "in the iterating thread cannot time itself out)")
        if max_held_batches is not None and (isinstance(max_held_batches, bool) or
                                             not isinstance(max_held_batches, int) or
                                             max_held_batches < 1):
            raise ValueError("stoke_loader: max_held_batches must be a positive int or None, "
                             f"not {max_held_batches!r}")
        if transform is not None and not callable(transform):
            raise TypeError(f"stoke_loader: transform must be callable, not {transform!r}")
        self._transform = transform
        self._native = _native.Loader(_columns(data), batch_size, bool(shuffle), seed,
                                      num_workers, queue_depth, remainder,
                                      0.0 if batch_timeout is None else float(batch_timeout),
                                      max_held_batches or 0, bool(shuffle_shards))

    @classmethod
    def _wrap(cls, native, transform) -> "Loader":
        loader = cls.__new__(cls)
        loader._native = native
        loader._transform = transform
        return loader

    def __iter__(self) -> Iterator[Batch]:
        """The next epoch's batches, in order (begins the next epoch); with a ``transform``,
        its results."""
        if self._transform is None:
            return self._native.iter()
        return _Transformed(self._native.iter(), self._transform)

    @property
    def max_held_batches(self) -> Optional[int]:
        """The bound on batches the consumer holds (``None``: none)."""
        return self._native.max_held or None

    @property
    def held_batches(self) -> int:
        """Batches of this loader the consumer holds now (alive, or arrays over them)."""
        return self._native.held

    def __len__(self) -> int:
        """Batches the next epoch yields."""
        return self._native.num_batches

    @property
    def epoch(self) -> int:
        """The epoch the next ``for`` loads."""
        return self._native.epoch

    def set_epoch(self, epoch: int) -> None:
        """Makes the next ``for`` load ``epoch`` from its start (the epochs after follow)."""
        self._native.set_epoch(epoch)

    @property
    def num_items(self) -> int:
        """Rows the next epoch yields, padding included."""
        return self._native.num_items

    @property
    def num_padded(self) -> int:
        """Rows of the next epoch that repeat others (``remainder="pad"``)."""
        return self._native.num_padded

    @property
    def num_dropped(self) -> int:
        """Samples no share reads in the next epoch (``remainder="drop"``)."""
        return self._native.num_dropped

    @property
    def dataset_size(self) -> int:
        """Rows in every column."""
        return self._native.dataset_size

    @property
    def device(self) -> str:
        """The device batches are made for (``"cpu:N"``)."""
        return self._native.device

    def split(self, devices: Union[int, Iterable[Union[int, str]]]) -> list["Loader"]:
        """One loader per device (``devices``: a count, or CPU device indices or ``"cpu:N"``).

        Device ``k`` of ``n`` takes every ``n``-th batch of the epoch, starting with batch
        ``k``: the same number of batches each, disjoint, covering the epoch, re-drawn every
        epoch. Iterate them in lockstep (``zip(*loaders)``)."""
        if isinstance(devices, int):
            indices = list(range(devices))
        else:
            indices = [_device_index(d) for d in devices]
        return [type(self)._wrap(native, self._transform)
                for native in self._native.split(indices)]

    def share(self, count: int, index: int) -> "Loader":
        """Share ``index`` of ``count``: the loader of one rank of ``count`` (a
        ``torch.distributed`` rank: ``share(world_size, rank)``), by the rule of ``split``,
        so splitting a rank's share over its devices equals one split over all devices."""
        return type(self)._wrap(self._native.share(count, index), self._transform)

    def state_dict(self) -> dict:
        """Where the loader stands: the loader state JSON (format ``stoke.loader_state.v3``)
        as a dict. Taken inside the loop body it counts the batch being processed; a share's
        state is that of all shares together (they run in lockstep)."""
        return _json.loads(self._native.state_json())

    def load_state_dict(self, state: Union[Mapping, str, bytes]) -> None:
        """Resumes from ``state`` (a dict from :meth:`state_dict`, or its JSON text): the next
        ``for`` loads the rest of that epoch, split over this loader's shares whatever their
        number was. A state of another dataset size, seed or order raises
        :class:`InputError` naming the mismatch."""
        if isinstance(state, (bytes, bytearray)):
            state = state.decode()
        if isinstance(state, Mapping):
            try:
                state = _json.dumps(dict(state))
            except (TypeError, ValueError) as error:
                raise InputError(f"stoke_loader: loader state is not JSON: {error}") from None
        if not isinstance(state, str):
            raise TypeError("stoke_loader: load_state_dict takes a dict or JSON text, not "
                            f"{type(state).__name__}")
        self._native.restore_json(state)

    def close(self) -> None:
        """Stops the worker threads now and waits for them (a batch being made is finished
        first). An epoch still open raises :class:`StateError` at its next batch; iterating
        the loader again starts new workers."""
        self._native.close()

    def __enter__(self) -> "Loader":
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()

    def order(self, epoch: int) -> _np.ndarray:
        """The dataset index at every position of ``epoch``'s order."""
        return _np.asarray(self._native.order(epoch), dtype=_np.int64)

    def __repr__(self) -> str:
        return (f"stoke_loader.Loader(rows={self.dataset_size}, batches={len(self)}, "
                f"epoch={self.epoch}, device={self.device!r})")


class _Transformed:
    """One epoch's batches passed through a loader's ``transform``."""

    __slots__ = ("_epoch", "_transform")

    def __init__(self, epoch, transform: Callable[[Batch], Any]):
        self._epoch = epoch
        self._transform = transform

    def __iter__(self) -> "_Transformed":
        return self

    def __next__(self) -> Any:
        batch = next(self._epoch)
        try:
            return self._transform(batch)
        except Exception as error:
            if hasattr(error, "add_note"):
                error.add_note(f"stoke_loader: in the transform of batch epoch {batch.epoch}, "
                               f"step {batch.step} ({batch.device})")
            raise


def _device_index(device: Union[int, str]) -> int:
    if isinstance(device, int) and not isinstance(device, bool) and device >= 0:
        return device
    if isinstance(device, str) and device.startswith("cpu:") and device[4:].isdigit():
        return int(device[4:])
    raise ValueError(f"stoke_loader: {device!r} is not a CPU device (an index or 'cpu:N')")


class SequenceLoader(Loader):
    """Planned batches of token sequences (padded, packed or bucketed): made by
    :func:`padded`, :func:`packed` or :func:`bucketed`. A :class:`Loader` in all else: its
    positions are the batches of each epoch's plan, so ``len``, ``split``/``share`` (equal
    batch counts; a padding batch repeats one with a loss mask of zeros), ``state_dict`` /
    ``load_state_dict`` (exact, and elastic onto another number of shares; a state of another
    plan is refused) and the worker threads are the loader's own."""

    def order(self, epoch: int) -> _np.ndarray:
        """A plan has no order of samples: a batch's documents are ``batch["documents"]``."""
        raise UsageError("stoke_loader: a SequenceLoader's epoch is a plan of batches, not an "
                         "order of samples; each batch's documents are batch['documents']")

    def __repr__(self) -> str:
        return (f"stoke_loader.SequenceLoader(sequences={self.dataset_size}, "
                f"batches={len(self)}, epoch={self.epoch}, device={self.device!r})")


# Sequences need SequenceLoader (above): imported last.
from ._sequences import (  # noqa: E402
    Mixture, SequenceBatch, TokenStore, bucketed, mixture, packed, padded, token_store)
from .token_store_writer import TokenStoreWriter, write_texts  # noqa: E402

__all__ += ["SequenceLoader", "SequenceBatch", "TokenStore", "token_store", "padded", "packed",
            "bucketed", "Mixture", "mixture", "TokenStoreWriter", "write_texts"]

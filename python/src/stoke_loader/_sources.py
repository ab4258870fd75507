"""File sources of stoke_loader: ``.npy`` and ``.npz`` files read in place, directories or lists
of them as sharded columns, and HDF5 / NetCDF-4 variables."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Iterable, Optional, Union

import numpy as np

from . import _native
from ._native import StokeError, UsageError

if TYPE_CHECKING:
    from ._stored import StoredColumn

PathLike = Union[str, "os.PathLike[str]"]

_HDF5_SUFFIXES = (".h5", ".hdf5", ".hdf", ".he5", ".nc", ".nc4")


class NotBuiltError(StokeError, NotImplementedError):
    """A source this build of stoke_loader lacks (HDF5 without libhdf5, images without
    libturbojpeg/libpng at build time); the message says what to install."""


def npy(path: PathLike) -> np.ndarray:
    """The array of the ``.npy`` file ``path``, read-only, viewing the memory-mapped file (no
    copy; rows are read from disk when a batch needs them). Its header is checked by stoke: a
    bad file raises :class:`InputError` naming it and the byte offset."""
    return _native.load_npy(os.fspath(path))


def npz(path: PathLike, members: Optional[Iterable[str]] = None, *,
        inflate: bool = False) -> dict[str, np.ndarray]:
    """The arrays of the ``.npz`` file ``path`` (all, or ``members``), by name, ready to pass to
    :class:`Loader`.

    A stored member (``np.savez``) is a read-only array viewing the memory-mapped file at the
    member's offset: no copy. A compressed member (``np.savez_compressed``) cannot be read in
    place: it raises :class:`InputError` naming the file and the member, unless
    ``inflate=True``, which inflates it into memory (a copy, checked against its CRC-32).
    A truncated or corrupt file raises :class:`InputError` naming the file, member and offset.
    """
    path = os.fspath(path)
    names = list(_native.npz_members(path) if members is None else members)
    return {name: _native.load_npz(path, name, bool(inflate)) for name in names}


class _NativeColumnSource:
    """A source of one column made by a native constructor: ``_make(name)`` makes the column
    for a loader's column ``name`` (the one made first is reused when the names agree)."""

    _native: object

    def _make(self, name: str):
        raise NotImplementedError

    @property
    def rows(self) -> int:
        """Rows of the column."""
        return self._native.rows

    @property
    def row_shape(self) -> tuple[int, ...]:
        """The shape of one row."""
        return tuple(self._native.row_shape)

    def _column(self, name: str):
        if name == self._native.name:
            return self._native
        return self._make(name)


class ShardedColumn(_NativeColumnSource):
    """One column over many array files, their rows laid end to end (shard ``k`` is file
    ``k``), read by stoke's ``ShardedArrays``: a shard cache keeps ``resident`` files open and
    reads the next ones of the epoch ahead. Made by :func:`shards`; pass it to
    :class:`Loader` as a column (with ``shuffle_shards=True`` to keep consecutive batches in
    one shard)."""

    def __init__(self, files: list[str], kind: str, member: str, inflate: bool,
                 resident: int, io_threads: int, name: str):
        self.files = files
        self.kind = kind
        self.member = member
        self._args = (files, kind, member, bool(inflate), int(resident), int(io_threads))
        self._native = _native.shard_column(name, *self._args)  # opens and checks every file

    def _make(self, name: str):
        return _native.shard_column(name, *self._args)

    def __repr__(self) -> str:
        return (f"stoke_loader.ShardedColumn({len(self.files)} {self.kind} files, "
                f"rows={self.rows}, row_shape={self.row_shape})")


def _list_files(source: Union[PathLike, Iterable[PathLike]], pattern: Optional[str]) -> list[str]:
    if isinstance(source, (str, os.PathLike)) and os.path.isdir(source):
        directory = os.fspath(source)
        if pattern is not None:
            return list(_native.files_matching(directory, pattern))
        kinds = [p for p in ("*.npy", "*.npz") if _matches(directory, p)]
        if len(kinds) > 1:
            raise UsageError(f"stoke_loader: '{directory}' holds both .npy and .npz files; pass "
                             "pattern='*.npy' or pattern='*.npz'")
        return list(_native.files_matching(directory, kinds[0] if kinds else "*.npy"))
    if isinstance(source, (str, os.PathLike)):
        return [os.fspath(source)]
    files = [os.fspath(p) for p in source]
    if not files:
        raise UsageError("stoke_loader: shards() needs at least one file")
    return files


def _matches(directory: str, pattern: str) -> bool:
    import fnmatch

    return any(fnmatch.fnmatch(name, pattern) and os.path.isfile(os.path.join(directory, name))
               for name in os.listdir(directory))


def shards(source: Union[PathLike, Iterable[PathLike]], *, pattern: Optional[str] = None,
           member: Optional[str] = None, variable: Optional[str] = None, inflate: bool = False,
           resident: Optional[int] = None, io_threads: int = 1,
           manifest: Optional[str] = None, cache: Optional[PathLike] = None,
           cache_bytes: Optional[int] = None,
           ) -> Union[ShardedColumn, "StoredColumn", dict[str, ShardedColumn],
                      dict[str, "StoredColumn"]]:
    """Many array files as one dataset: ``source`` is a directory (its files matching
    ``pattern``, sorted by name; by default its ``*.npy`` or its ``*.npz`` files) or a list of
    files, in order. Every file holds the same dtype and row shape; their rows follow one
    another.

    - ``.npy`` files: one :class:`ShardedColumn`, each file memory-mapped (read in place).
    - ``.npz`` files: a dict of one :class:`ShardedColumn` per array (the first file's
      members, or only ``member``); stored members are read in place from the mapped files
      (no shard cache: the page cache is it); compressed ones raise :class:`InputError` naming
      file and member unless ``inflate=True`` (then read by ``ShardedArrays``, each shard
      inflated into memory when loaded).
    - HDF5 / NetCDF-4 files (``.h5``, ``.nc``, ...): the variable ``variable`` of each, one
      :class:`ShardedColumn`; a shard is read into memory when loaded.

    ``resident``: shards kept open at once (default: all for files read in place, whose cost
    is address space; 2 for inflated or HDF5 shards, whose cost is memory). ``io_threads``:
    threads reading the epoch's next shards ahead. A file that cannot be read, is corrupt, or
    holds another dtype or row shape than the first raises :class:`InputError` naming it.

    URLs: ``source`` may instead be a URL of ``.npy`` or ``.npz`` shards, or a list of them, in
    one store: ``s3://bucket/train/*.npy`` (a glob, a prefix ending in ``/``, or one object),
    ``http(s)://host/path/a.npy`` (HTTP has no listing: name each object) or
    ``file:///data/a.npy``. They are ``.npz`` shards when they end in ``.npz`` (a glob such as
    ``*.npz``, or objects) or when ``member`` names an array; then, as for ``.npz`` files, the
    result is a dict of one :class:`StoredColumn` per array (the first object's, or only
    ``member``), the same rows as the same files read locally. A fetched ``.npz`` object is in
    memory: a stored member is viewed in place in it, a compressed one inflated (``inflate``
    does not matter), and the CRC-32 of both is checked. ``manifest``: the URL of their
    manifest (stoke's ``ArrayManifest::to_json``; for ``.npz`` shards, of the array
    ``member`` names), so that opening reads no shard; without it each ``.npy`` shard is read
    once at open for its header, and each ``.npz`` shard whole once, its arrays checked together.
    ``cache`` and ``cache_bytes``: a folder of the node's disk and its byte bound, a node cache
    that every process of the node shares (each shard fetched once per node). Credentials come
    from the standard AWS variables and files. A damaged shard (a ``.npz`` object with a wrong
    CRC-32, a shard unlike the manifest) raises :class:`InputError` naming its URL at open, or,
    opened from a manifest, fails the batch that reads it (:class:`DataError`, naming it).
    """
    from . import _stored  # URLs: stoke's byte stores (its module imports this one)

    if _stored.is_url(source):
        if pattern is not None or variable is not None:
            raise UsageError("stoke_loader: shards() of URLs reads .npy and .npz shards, named "
                             "by the URLs: pattern and variable do not apply")
        return _stored.stored_shards(source, member=member, manifest=manifest, cache=cache,
                                     cache_bytes=cache_bytes, resident=resident,
                                     io_threads=io_threads)
    files = _list_files(source, pattern)
    suffixes = {os.path.splitext(f)[1].lower() for f in files}
    if len(suffixes) != 1:
        raise UsageError(f"stoke_loader: shards() reads files of one kind, not {sorted(suffixes)}")
    suffix = suffixes.pop()
    if suffix in _HDF5_SUFFIXES or variable is not None:
        if variable is None:
            raise UsageError("stoke_loader: shards() of HDF5 files needs variable='name'")
        if not _native.has_hdf5:
            raise NotBuiltError(_NO_HDF5)
        return ShardedColumn(files, "hdf5", variable, False, resident or 2, io_threads, variable)
    if suffix == ".npy":
        return ShardedColumn(files, "npy", "", False, resident or len(files), io_threads, "x")
    if suffix == ".npz":
        names = [member] if member is not None else list(_native.npz_members(files[0]))
        if not names:
            raise UsageError(f"stoke_loader: npz file '{files[0]}' holds no array")
        keep = resident or (2 if inflate else len(files))
        return {name: ShardedColumn(files, "npz", name, inflate, keep, io_threads, name)
                for name in names}
    raise UsageError(f"stoke_loader: shards() reads .npy, .npz, or HDF5/NetCDF-4 files (with "
                     f"variable=), not '{suffix}' files")


# How a user gets an optional part that a build lacked: pip caches the wheel it built from an
# sdist (keyed by the sdist's name and place), so a plain reinstall would not build again.
_REINSTALL = ("then reinstall stoke_loader so that it is built again: pip install "
              "--force-reinstall --no-cache-dir stoke_loader-<version>.tar.gz (without "
              "--no-cache-dir pip reuses the wheel it built before)")

_NO_HDF5 = ("stoke_loader was built without HDF5: libhdf5 was not found when it was built. "
            "To read HDF5 and NetCDF-4 variables, install it (Debian: apt install "
            "libhdf5-dev), " + _REINSTALL)


class Hdf5Column(_NativeColumnSource):
    """The variable ``variable`` of an HDF5 or NetCDF-4 file, rows along its first axis, read
    by hyperslab when a batch needs them (values as stored: NetCDF's ``scale_factor``,
    ``add_offset`` and ``_FillValue`` are not applied). Made by :func:`hdf5`."""

    def __init__(self, path: str, variable: str):
        self.path = path
        self.variable = variable
        self._native = _native.Hdf5Column(variable, path, variable)

    def _make(self, name: str):
        return _native.Hdf5Column(name, self.path, self.variable)

    def __repr__(self) -> str:
        return f"stoke_loader.hdf5({self.path!r}, {self.variable!r})"


def hdf5(path: PathLike, variable: str) -> Hdf5Column:
    """The variable ``variable`` (``"name"`` or ``"/group/name"``) of the HDF5 or NetCDF-4
    (an HDF5 file) file ``path``, as a column. Raises :class:`InputError` naming the file and
    the variable when it is missing (listing what its group holds), not numeric, or a scalar;
    :class:`NotBuiltError` when this build of stoke_loader has no HDF5."""
    if not _native.has_hdf5:
        raise NotBuiltError(_NO_HDF5)
    return Hdf5Column(os.fspath(path), variable)

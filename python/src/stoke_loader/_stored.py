"""Shards named by URLs (``s3://``, ``http(s)://``, ``file://``) for :func:`stoke_loader.shards`
and :func:`stoke_loader.records`: stoke's byte stores under the shard cache, optionally through
a node cache shared by the processes of a node."""

from __future__ import annotations

import os
import re
from typing import Callable, Iterable, Optional, Sequence, Union

from . import _native
from ._native import UsageError
from ._sources import NotBuiltError, _NativeColumnSource

_URL = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")  # a scheme: s3, http(s), file, or another
_REMOTE = ("s3://", "http://", "https://")

PathLike = Union[str, "os.PathLike[str]"]


def is_url(source: object) -> bool:
    """Whether ``source`` (or, for a list, its first item) is a URL (``scheme://...``): stoke's
    stores read it, or say that no store serves its scheme."""
    if isinstance(source, (list, tuple)) and source:
        source = source[0]
    return isinstance(source, str) and _URL.match(source) is not None


class StoredColumn(_NativeColumnSource):
    """One column over objects in a byte store, read by stoke's ``ShardedArrays`` through the
    store (and a node cache when ``cache`` is given): ``.npy`` shards, one array of ``.npz``
    shards, or record files (``kind``: ``"npy"``, ``"npz"``, ``"records"``). Made by
    :func:`stoke_loader.shards` and :func:`stoke_loader.records` for URLs; pass it to
    :class:`Loader` as a column."""

    def __init__(self, urls: list[str], kind: str, make: Callable[[str], object], name: str,
                 native: object = None):
        self.urls = urls
        self.kind = kind
        self._open = make
        # Lists the URLs, reads the manifest (or the shards), checks; unless made already.
        self._native = make(name) if native is None else native

    def _make(self, name: str):
        return self._open(name)

    def __repr__(self) -> str:
        return (f"stoke_loader.StoredColumn({self.urls!r}, kind={self.kind!r}, "
                f"rows={self.rows}, row_shape={self.row_shape})")


def checked_urls(source: Union[str, Iterable[str]], cache, cache_bytes: Optional[int],
                 what: str) -> list[str]:
    """The URLs of ``source`` (one, or a list), refused with the reason when there are none,
    when this build reads no ``http(s)://`` or ``s3://`` URL (without libcurl), or when a
    ``cache`` comes without its ``cache_bytes``. ``what`` names the caller in errors."""
    urls = [source] if isinstance(source, str) else [os.fspath(u) for u in source]
    if not urls:
        raise UsageError(f"stoke_loader: {what} needs at least one URL")
    if any(u.lower().startswith(_REMOTE) for u in urls) and not _native.has_remote_stores:
        raise NotBuiltError(
            "stoke_loader was built without libcurl, so it reads no http(s):// or s3:// URL: "
            "install it (Debian: apt install libcurl4-openssl-dev), then reinstall "
            "stoke_loader so that it is built again: pip install --force-reinstall "
            "--no-cache-dir stoke_loader-<version>.tar.gz")
    if cache is not None and not cache_bytes:
        raise UsageError(f"stoke_loader: {what[:-2]}(cache=...) needs cache_bytes, the node "
                         "cache's byte bound")
    return urls


def _cache_args(cache: Optional[PathLike], cache_bytes: Optional[int]) -> tuple[str, int]:
    return (os.fspath(cache) if cache is not None else "", int(cache_bytes or 0))


def _npz_urls(urls: list[str], member: Optional[str]) -> bool:
    """Whether ``urls`` name ``.npz`` shards: with ``member``, or when they end in ``.npz``
    (objects, or a glob such as ``*.npz``); refuses URLs naming both kinds."""
    suffixes = {u.lower().rsplit(".", 1)[-1] for u in urls} & {"npy", "npz"}
    if len(suffixes) > 1:
        raise UsageError("stoke_loader: shards() reads shards of one kind, not .npy and .npz")
    return member is not None or suffixes == {"npz"}


def stored_shards(source: Union[str, Iterable[str]], *, member: Optional[str] = None,
                  manifest: Optional[str] = None, cache: Optional[PathLike] = None,
                  cache_bytes: Optional[int] = None, resident: Optional[int] = None,
                  io_threads: int = 1) -> Union[StoredColumn, dict[str, StoredColumn]]:
    """``.npy`` or ``.npz`` shards named by URLs, as :func:`stoke_loader.shards` reads them
    (see there): one column of ``.npy`` shards, or a dict of one column per array of ``.npz``
    shards (``member``'s only)."""
    urls = checked_urls(source, cache, cache_bytes, "shards()")
    stored = _cache_args(cache, cache_bytes)
    args = (int(resident or 2), int(io_threads), *stored)

    def column(array: str, name: str, native: object = None) -> StoredColumn:
        def make(named: str):
            return _native.stored_shard_column(named, urls, manifest or "", array, *args)

        return StoredColumn(urls, "npz" if array else "npy", make, name, native)

    if not _npz_urls(urls, member):
        return column("", "x")
    if member is None and manifest is not None:
        raise UsageError("stoke_loader: a manifest of .npz shards describes one array: name it "
                         "with member=")
    if manifest is not None:
        return {member: column(member, member)}
    # Without a manifest every object is read whole once, for all its arrays together.
    made = _native.stored_npz_columns(urls, [member] if member is not None else [], *args)
    if not made:
        raise UsageError(f"stoke_loader: the npz object '{urls[0]}' holds no array")
    return {name: column(name, name, native) for name, native in made}


def stored_records(source: Union[str, Iterable[str]], code: int, bits: int,
                   shape: Sequence[int], *, cache: Optional[PathLike] = None,
                   cache_bytes: Optional[int] = None, resident: Optional[int] = None,
                   io_threads: int = 1) -> StoredColumn:
    """Record objects named by URLs, as :func:`stoke_loader.records` reads them (see there):
    records of the DLPack type ``(code, bits)`` and ``shape``."""
    urls = checked_urls(source, cache, cache_bytes, "records()")
    args = (code, bits, list(shape), int(resident or 2), int(io_threads),
            *_cache_args(cache, cache_bytes))
    return StoredColumn(urls, "records",
                        lambda name: _native.stored_record_column(name, urls, *args), "x")

"""Shards named by URLs (``s3://``, ``http(s)://``, ``file://``) for :func:`stoke_loader.shards`:
stoke's byte stores under the shard cache, optionally through a node cache shared by the
processes of a node."""

from __future__ import annotations

import os
import re
from typing import Iterable, Optional, Union

from . import _native
from ._native import UsageError
from ._sources import NotBuiltError, _NativeColumnSource

_URL = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")  # a scheme: s3, http(s), file, or another
_REMOTE = ("s3://", "http://", "https://")


def is_url(source: object) -> bool:
    """Whether ``source`` (or, for a list, its first item) is a URL (``scheme://...``): stoke's
    stores read it, or say that no store serves its scheme."""
    if isinstance(source, (list, tuple)) and source:
        source = source[0]
    return isinstance(source, str) and _URL.match(source) is not None


class StoredColumn(_NativeColumnSource):
    """One column over ``.npy`` shards in a byte store, read by stoke's ``ShardedArrays``
    through the store (and a node cache when ``cache`` is given). Made by
    :func:`stoke_loader.shards` for URLs; pass it to :class:`Loader` as a column."""

    def __init__(self, urls: list[str], manifest: str, resident: int, io_threads: int,
                 cache: str, cache_bytes: int, name: str):
        self.urls = urls
        self._args = (urls, manifest, int(resident), int(io_threads), cache, int(cache_bytes))
        self._native = _native.stored_shard_column(name, *self._args)

    def _make(self, name: str):
        return _native.stored_shard_column(name, *self._args)

    def __repr__(self) -> str:
        return (f"stoke_loader.StoredColumn({self.urls!r}, rows={self.rows}, "
                f"row_shape={self.row_shape})")


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


def stored_shards(source: Union[str, Iterable[str]], *, manifest: Optional[str] = None,
                  cache: Optional[Union[str, "os.PathLike[str]"]] = None,
                  cache_bytes: Optional[int] = None, resident: Optional[int] = None,
                  io_threads: int = 1) -> StoredColumn:
    """``.npy`` shards named by URLs, as :func:`stoke_loader.shards` reads them (see there)."""
    urls = checked_urls(source, cache, cache_bytes, "shards()")
    return StoredColumn(urls, manifest or "", resident or 2, io_threads,
                        os.fspath(cache) if cache is not None else "", cache_bytes or 0, "x")

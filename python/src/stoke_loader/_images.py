"""Image sources of stoke_loader: an image folder (torchvision's ``ImageFolder`` layout) or
WebDataset tar shards, decoded and augmented by stoke's decoders and augmentations."""

from __future__ import annotations

import collections.abc as abc
import os
from typing import Iterable, Iterator, Optional, Sequence, Union

from . import _native, _stored
from ._native import UsageError
from ._sources import _REINSTALL, NotBuiltError, PathLike

Normalize = tuple[Union[float, Sequence[float]], Union[float, Sequence[float]]]

_NO_IMAGES = ("stoke_loader was built without images: libturbojpeg, libjpeg or libpng was not "
              "found when it was built. To read image folders and tar shards, install them "
              "(Debian: apt install pkg-config libturbojpeg0-dev libjpeg62-turbo-dev "
              "libpng-dev), " + _REINSTALL)


class _ImageColumn:
    """The images or the labels of an :class:`Images` source, as a loader column."""

    def __init__(self, source, labels: bool):
        self._source = source
        self._labels = labels

    def _column(self, name: str):
        kind = _native.LabelColumn if self._labels else _native.ImageColumn
        return kind(name, self._source)


class Images(abc.Mapping):
    """An image source for :class:`Loader`: a mapping of ``"image"`` and ``"label"`` to its two
    columns, so ``Loader(images, ...)`` gives batches of both (or pick them:
    ``{"x": images["image"], "y": images["label"]}``).

    - ``batch["image"]``: uint8 ``[n, H, W, C]`` when not normalised, else float32
      ``[n, C, H, W]``, normalised per channel as stoke's C++ ``images::ImageBatcher`` does.
    - ``batch["label"]``: int32 ``[n]`` (the class index), read without decoding.

    Every image is decoded and augmented in a worker, straight into the batch, with its own
    random stream (seed, epoch, dataset index): the same augmentation whatever the workers,
    devices or ranks. An image that fails to decode raises :class:`DataError` naming the
    sample (its dataset index and file, or ``shard.tar:key``), epoch, step and device."""

    def __init__(self, source):
        self._source = source
        self._columns = {"image": _ImageColumn(source, False), "label": _ImageColumn(source, True)}

    def __getitem__(self, key: str):
        return self._columns[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._columns)

    def __len__(self) -> int:
        return len(self._columns)

    @property
    def num_samples(self) -> int:
        """Images in the source."""
        return self._source.size

    @property
    def classes(self) -> list[str]:
        """The class names of an image folder (``classes[label]``); empty for tar shards."""
        return list(self._source.classes)

    @property
    def paths(self) -> list[str]:
        """The tar shards, in order (paths, or for shards in a store their URLs, each followed
        by the endpoint it is read from), or the image folder."""
        return list(self._source.paths)

    def key(self, index: int) -> str:
        """Sample ``index``'s file (image folder) or key (tar shards; for shards in a store,
        its shard is fetched when it is not held)."""
        return self._source.key(index)

    def __repr__(self) -> str:
        return f"stoke_loader.Images({self.num_samples} images from {self.paths[:3]})"


def _options(size, crop: str, scale, ratio, flip: float, color_jitter, channels: int,
             normalize: Optional[Normalize], reduced_decode: bool, region_decode: bool):
    if not _native.has_images:
        raise NotBuiltError(_NO_IMAGES)
    height, width = (size, size) if isinstance(size, int) else tuple(size)
    options = _native.ImageOptions()
    options.crop = crop
    options.height, options.width = int(height), int(width)
    options.scale = [float(v) for v in scale]
    options.ratio = [float(v) for v in ratio]
    options.flip = float(flip)
    jitter = (0.0, 0.0, 0.0) if color_jitter is None else tuple(color_jitter)
    if len(jitter) != 3:
        raise ValueError("stoke_loader: color_jitter is (brightness, contrast, saturation)")
    options.jitter = [float(v) for v in jitter]
    options.channels = int(channels)
    if normalize is not None:
        mean, std = normalize
        per_channel = lambda v: [float(v)] * channels if isinstance(v, (int, float)) else [
            float(x) for x in v]
        options.mean, options.std = per_channel(mean), per_channel(std)
    options.reduced_decode = bool(reduced_decode)
    options.region_decode = bool(region_decode)
    return options


def _region_decode(region_decode: bool, window_decode: Optional[bool]) -> bool:
    """``region_decode``, or ``window_decode`` (its old name) where a caller gives that."""
    return region_decode if window_decode is None else bool(window_decode)


_AUGMENT_DOC = """
    Augmentation (stoke's, drawn per sample): ``size`` (``H`` or ``(H, W)``) is the output;
    ``crop`` is ``"resize"`` (the whole image resized), ``"center"`` (the centre, not resized;
    an image smaller than ``size`` is an error) or ``"random"`` (torchvision's
    ``RandomResizedCrop`` with ``scale`` and ``ratio``); ``flip`` is the probability of a
    horizontal flip; ``color_jitter`` is ``(brightness, contrast, saturation)`` strengths.
    ``channels``: 3 (RGB) or 1 (grey). ``normalize=(mean, std)`` (per channel, or one value)
    gives float32 CHW images ``(x / 255 - mean) / std``; without it, uint8 HWC.
    ``reduced_decode`` lets JPEGs decode at a reduced DCT scale that still covers the output
    (faster; pixels differ slightly); ``region_decode`` decodes only the rows and columns the
    crop reads (same pixels; ``window_decode`` is its old name, still taken).
"""


def image_folder(root: PathLike, size: Union[int, Sequence[int]], *, crop: str = "resize",
                 scale: Sequence[float] = (0.08, 1.0),
                 ratio: Sequence[float] = (3 / 4, 4 / 3), flip: float = 0.0,
                 color_jitter: Optional[Sequence[float]] = None, channels: int = 3,
                 normalize: Optional[Normalize] = None,
                 extensions: Iterable[str] = (".jpg", ".jpeg", ".png"),
                 reduced_decode: bool = True, region_decode: bool = True,
                 window_decode: Optional[bool] = None) -> Images:
    """The images of ``root/<class>/<file>`` (torchvision's ``ImageFolder`` layout; classes
    sorted by name, labels their positions), read by stoke's ``images::ImageFolder``. A missing
    or empty folder raises :class:`InputError` naming it.
    """
    options = _options(size, crop, scale, ratio, flip, color_jitter, channels, normalize,
                       reduced_decode, _region_decode(region_decode, window_decode))
    return Images(_native.image_folder(os.fspath(root), list(extensions), options))


def tar_shards(source: Union[PathLike, Iterable[PathLike]], size: Union[int, Sequence[int]], *,
               pattern: str = "*.tar", crop: str = "resize",
               scale: Sequence[float] = (0.08, 1.0), ratio: Sequence[float] = (3 / 4, 4 / 3),
               flip: float = 0.0, color_jitter: Optional[Sequence[float]] = None,
               channels: int = 3, normalize: Optional[Normalize] = None, num_classes: int = 0,
               image_extensions: Iterable[str] = ("jpg", "jpeg", "png"),
               label_extension: str = "cls", reduced_decode: bool = True,
               region_decode: bool = True, window_decode: Optional[bool] = None,
               manifest: Optional[str] = None, cache: Optional[PathLike] = None,
               cache_bytes: Optional[int] = None, resident: int = 2,
               io_threads: int = 1) -> Images:
    """The samples of WebDataset tar shards (a directory's files matching ``pattern``, sorted,
    or a list of files), read in place from the memory-mapped shards by stoke's
    ``images::TarShards``: each sample one image member and one ``.cls`` label member (decimal
    text; below ``num_classes`` when it is set). Opening reads every header and label: a
    damaged archive, or a sample without its image or label or with a label that is not a
    number, raises :class:`InputError` naming the shard and the sample's key. A sharded
    source: ``Loader(..., shuffle_shards=True)`` keeps consecutive batches in one shard and
    advises the kernel to read the epoch's next shards ahead.

    URLs: ``source`` may instead be a URL of tar shards, or a list of them, in one store, as
    :func:`shards` takes them: ``s3://bucket/train/*.tar`` (a glob, a prefix ending in ``/``,
    or one object), ``http(s)://host/path/a.tar`` (name each object) or ``file:///data/a.tar``;
    they are read by stoke's ``images::StoredTarShards``, with the same samples in the same
    order as the same shards read locally. ``manifest``: the URL of their manifest (a JSON list
    of ``{"key", "rows", "bytes"}``, ``rows`` being samples: stoke's ``stored_shards_json``),
    so that opening reads no shard; without it each shard is read whole once at open, to count
    its samples. A shard is fetched whole when the epoch reaches it: ``resident`` shards stay in
    memory and ``io_threads`` fetch the epoch's next ones ahead. ``cache`` and
    ``cache_bytes``: a node cache in that folder, bounded, shared by every process of the node
    (each shard fetched once per node). A damaged shard raises :class:`InputError` naming its
    URL, the sample's key or the header's offset; a shard unlike its manifest, naming its URL.
    """
    options = _options(size, crop, scale, ratio, flip, color_jitter, channels, normalize,
                       reduced_decode, _region_decode(region_decode, window_decode))
    if _stored.is_url(source):
        urls = _stored.checked_urls(source, cache, cache_bytes, "tar_shards()")
        return Images(_native.stored_tar_shards(
            urls, manifest or "", int(resident), int(io_threads),
            os.fspath(cache) if cache is not None else "", int(cache_bytes or 0),
            list(image_extensions), label_extension, int(num_classes), options))
    if manifest is not None or cache is not None:
        raise UsageError("stoke_loader: tar_shards() reads local files in place: manifest, "
                         "cache and cache_bytes apply to URLs (s3://, http(s)://, file://)")
    if isinstance(source, (str, os.PathLike)) and os.path.isdir(source):
        files = list(_native.files_matching(os.fspath(source), pattern))
    elif isinstance(source, (str, os.PathLike)):
        files = [os.fspath(source)]
    else:
        files = [os.fspath(p) for p in source]
    return Images(_native.tar_shards(files, list(image_extensions), label_extension,
                                     int(num_classes), options))


image_folder.__doc__ += _AUGMENT_DOC
tar_shards.__doc__ += _AUGMENT_DOC

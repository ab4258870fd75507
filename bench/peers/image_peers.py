"""The peer loaders of the image benchmark (scripts/image-bench), each at its expert idiom.

Each peer loads the JPEGs of an ImageFolder (FOLDER/class-N/INDEX.jpg) and applies the same
augmentation as bench/image_bench.cpp: random resized crop to --crop (scale (0.08, 1), ratio
(3/4, 4/3)), random horizontal flip (p = 0.5), conversion to float32 and per-channel
normalisation (mean 0.5, std 0.25 of the 0..1 range), CHW, batches of --batch, with --workers
worker threads or processes. Where a library offers several reasonable ways, each is a
configuration of its own (the report keeps each peer's best):

  PyTorch DataLoader   torch.utils.data.DataLoader with torchvision: ImageFolder with PIL and
                       transforms.v2 (two orders), torchvision.io.decode_jpeg per sample, a
                       batched fetch (BatchSampler, one dataset call per batch), and Pillow
                       with Image.draft (its reduced-size decode) batched the same way
  DALI                 NVIDIA DALI CPU pipelines (device_id=None): fused decode-and-crop, or
                       decode then random_resized_crop; through DALIGenericIterator or pipe.run()
  SPDL                 spdl.pipeline with spdl.io (FFmpeg) decoding: crop/scale/flip in an
                       FFmpeg filter graph, or RGB decode then torchvision crop/flip
  torchdata nodes      torchdata.nodes with thread workers (torchvision decode_jpeg)

Each configuration runs in a fresh child process (so no thread pool or worker of one lingers
into the next) for --epochs epochs. It checks each batch (N x 3 x crop x crop float32, values
in the normalised range, at most one batch of an epoch short: the remainder, which loaders
that deliver in completion order may hand out before the epoch's last full batch) and that
each epoch holds each file exactly once (the count and the per-class label histogram), and
prints one JSON line:

  {"peer": ..., "config": ..., "images_per_second": X, "first_batch_seconds": Y, "images": N}

images_per_second is measured on the LAST epoch, from asking for the epoch's iterator to its
last batch (the earlier epochs warm the page cache and start the workers); first_batch_seconds
is the time from constructing the loader (file listing included) to the first batch of the
first epoch. A peer that cannot be imported or fails prints {"peer": ..., "error": ...} and
the script goes on.

Usage: image_peers.py --folder FOLDER --batch 256 --crop 56 --workers 2 --epochs 2
                      [--only NAME ...] [--list]
(--only takes peer names or configuration ids, case-insensitive; --list shows the ids.)
"""

import argparse
import json
import math
import os
import random
import signal
import subprocess
import sys
import time

MEAN = 0.5  # per channel, of the 0..1 range
STD = 0.25
SCALE = (0.08, 1.0)
RATIO = (3.0 / 4.0, 4.0 / 3.0)


# ------------------------------------------------------------------------------------------
# Shared helpers
# ------------------------------------------------------------------------------------------


def scan(folder):
    """(path, label) of each JPEG, in ImageFolder's order (sorted classes, sorted files)."""
    classes = sorted(entry.name for entry in os.scandir(folder) if entry.is_dir())
    samples = []
    for label, name in enumerate(classes):
        directory = os.path.join(folder, name)
        for file in sorted(os.listdir(directory)):
            if file.lower().endswith((".jpg", ".jpeg")):
                samples.append((os.path.join(directory, file), label))
    return samples, len(classes)


def crop_params(height, width):
    """torchvision's RandomResizedCrop.get_params on Python's `random`: (top, left, h, w)."""
    area = height * width
    log_ratio = (math.log(RATIO[0]), math.log(RATIO[1]))
    for _ in range(10):
        target_area = area * random.uniform(*SCALE)
        aspect = math.exp(random.uniform(*log_ratio))
        w = int(round(math.sqrt(target_area * aspect)))
        h = int(round(math.sqrt(target_area / aspect)))
        if 0 < w <= width and 0 < h <= height:
            return random.randint(0, height - h), random.randint(0, width - w), h, w
    in_ratio = width / height
    if in_ratio < RATIO[0]:
        w, h = width, int(round(width / RATIO[0]))
    elif in_ratio > RATIO[1]:
        h, w = height, int(round(height * RATIO[1]))
    else:
        w, h = width, height
    return (height - h) // 2, (width - w) // 2, h, w


def normalize_uint8_batch(batch, out=None):
    """(x / 255 - MEAN) / STD of a uint8 batch (N, 3, H, W, any strides) as contiguous float32:
    ToDtype(float32, scale=True) + Normalize, done once per batch instead of per image."""
    import torch

    if out is None:
        out = torch.empty(batch.shape, dtype=torch.float32)
    out.copy_(batch)
    return out.sub_(255.0 * MEAN).div_(255.0 * STD)


def shared_float_batch(shape):
    """A float32 tensor in shared memory when called in a DataLoader worker (as default_collate
    does), so the batch is not copied again on its way to the main process."""
    import torch
    from torch.utils.data import get_worker_info

    if get_worker_info() is None:
        return torch.empty(shape, dtype=torch.float32)
    numel = math.prod(shape)
    storage = torch.empty(0)._typed_storage()._new_shared(numel, device="cpu")
    return torch.empty(0).new(storage).view(shape)


def tv_decode(path):
    """File bytes -> uint8 CHW tensor with torchvision.io (libjpeg-turbo)."""
    from torchvision.io import ImageReadMode, decode_jpeg, read_file

    return decode_jpeg(read_file(path), mode=ImageReadMode.RGB)


def tv_crop_flip(image, crop):
    """Random resized crop and flip of a uint8 (3, H, W) tensor with torchvision's functional
    API (the v2 transforms' kernels without their per-call dispatch)."""
    from torchvision.transforms.v2 import functional as F

    top, left, h, w = crop_params(image.shape[-2], image.shape[-1])
    image = F.resized_crop(image, top, left, h, w, [crop, crop], antialias=True)
    if random.random() < 0.5:
        image = F.horizontal_flip(image)
    return image


def v2_tensor_transforms(crop):
    """The transforms.v2 pipeline on uint8 image tensors."""
    import torch
    from torchvision.transforms import v2

    return v2.Compose([v2.RandomResizedCrop(crop, scale=SCALE, ratio=RATIO, antialias=True),
                       v2.RandomHorizontalFlip(0.5), v2.ToDtype(torch.float32, scale=True),
                       v2.Normalize([MEAN] * 3, [STD] * 3)])


def stack_uint8(images, labels):
    """Collate uint8 CHW crops and labels into a normalised float batch and a label tensor."""
    import torch

    return normalize_uint8_batch(torch.stack(images)), torch.tensor(labels)


# ------------------------------------------------------------------------------------------
# PyTorch DataLoader + torchvision
# ------------------------------------------------------------------------------------------


class DecodeJpegDataset:
    """Map-style dataset: file bytes, torchvision.io.decode_jpeg, v2 transforms on tensors."""

    def __init__(self, samples, transform):
        self.samples, self.transform = samples, transform

    def __len__(self):
        return len(self.samples)

    def __getitem__(self, index):
        path, label = self.samples[index]
        return self.transform(tv_decode(path)), label


class DecodeJpegBatches:
    """Map-style dataset indexed by a list of indices (a BatchSampler's batch): decodes and
    crops each image into one uint8 batch, then converts and normalises the batch at once into
    shared memory, so the DataLoader neither collates nor re-copies."""

    def __init__(self, samples, crop):
        self.samples, self.crop = samples, crop

    def __len__(self):
        return len(self.samples)

    def __getitem__(self, indices):
        import torch

        images = torch.empty((len(indices), 3, self.crop, self.crop), dtype=torch.uint8)
        for row, index in enumerate(indices):
            images[row] = tv_crop_flip(tv_decode(self.samples[index][0]), self.crop)
        labels = torch.tensor([self.samples[index][1] for index in indices])
        return normalize_uint8_batch(images, shared_float_batch(images.shape)), labels


class PilDraftBatches:
    """Map-style dataset indexed by a BatchSampler's batch: each JPEG opened with Pillow, the
    crop drawn from the header's size, `Image.draft` asked for the smallest DCT scale that keeps
    the crop at least the output size (Pillow's reduced decode), then the scaled box resized to
    the output and flipped; normalised per batch into shared memory."""

    def __init__(self, samples, crop):
        self.samples, self.crop = samples, crop

    def __len__(self):
        return len(self.samples)

    def __getitem__(self, indices):
        import numpy as np
        import torch
        from PIL import Image

        images = torch.empty((len(indices), 3, self.crop, self.crop), dtype=torch.uint8)
        for row, index in enumerate(indices):
            with Image.open(self.samples[index][0]) as image:
                width, height = image.size
                top, left, h, w = crop_params(height, width)
                reduce = max(self.crop / h, self.crop / w)
                if reduce < 1:
                    image.draft("RGB", (math.ceil(width * reduce), math.ceil(height * reduce)))
                sx, sy = image.size[0] / width, image.size[1] / height
                box = (left * sx, top * sy, (left + w) * sx, (top + h) * sy)
                out = image.convert("RGB").resize((self.crop, self.crop), Image.BILINEAR, box=box)
            if random.random() < 0.5:
                out = out.transpose(Image.FLIP_LEFT_RIGHT)
            images[row] = torch.from_numpy(np.asarray(out)).permute(2, 0, 1)
        labels = torch.tensor([self.samples[index][1] for index in indices])
        return normalize_uint8_batch(images, shared_float_batch(images.shape)), labels


def dataloader(dataset, args, **kwargs):
    from torch.utils.data import DataLoader

    return DataLoader(dataset, num_workers=args.workers, persistent_workers=args.workers > 0,
                      pin_memory=False, **kwargs)


def pytorch_pil(args, tensor_first):
    import torch
    from torchvision import datasets
    from torchvision.transforms import v2

    crop = [v2.RandomResizedCrop(args.crop, scale=SCALE, ratio=RATIO, antialias=True),
            v2.RandomHorizontalFlip(0.5)]
    to_image = [v2.ToImage()]
    steps = to_image + crop if tensor_first else crop + to_image
    steps += [v2.ToDtype(torch.float32, scale=True), v2.Normalize([MEAN] * 3, [STD] * 3)]
    dataset = datasets.ImageFolder(args.folder, transform=v2.Compose(steps))
    loader = dataloader(dataset, args, batch_size=args.batch, shuffle=True)
    return lambda epoch: loader


def pytorch_decode_jpeg(args):
    samples, _ = scan(args.folder)
    dataset = DecodeJpegDataset(samples, v2_tensor_transforms(args.crop))
    loader = dataloader(dataset, args, batch_size=args.batch, shuffle=True)
    return lambda epoch: loader


def pytorch_pil_draft(args):
    from torch.utils.data import BatchSampler, RandomSampler

    samples, _ = scan(args.folder)
    dataset = PilDraftBatches(samples, args.crop)
    sampler = BatchSampler(RandomSampler(range(len(samples))), args.batch, drop_last=False)
    loader = dataloader(dataset, args, sampler=sampler, batch_size=None)
    return lambda epoch: loader


def pytorch_batched(args):
    from torch.utils.data import BatchSampler, RandomSampler

    samples, _ = scan(args.folder)
    dataset = DecodeJpegBatches(samples, args.crop)
    sampler = BatchSampler(RandomSampler(range(len(samples))), args.batch, drop_last=False)
    loader = dataloader(dataset, args, sampler=sampler, batch_size=None)
    return lambda epoch: loader


# ------------------------------------------------------------------------------------------
# NVIDIA DALI (CPU pipeline)
# ------------------------------------------------------------------------------------------


def dali_pipeline(args, fused):
    from nvidia.dali import fn, pipeline_def, types

    @pipeline_def(batch_size=args.batch, num_threads=args.workers, device_id=None)
    def pipeline():
        # pad_last_batch: the epoch ends on a batch of its own (padded with the last sample,
        # which the iterators drop), so each epoch holds each file once.
        jpegs, labels = fn.readers.file(file_root=args.folder, random_shuffle=True,
                                        pad_last_batch=True, name="Reader")
        if fused:  # decode only the region of interest, then resize it
            images = fn.decoders.image_random_crop(
                jpegs, device="cpu", output_type=types.RGB, random_area=list(SCALE),
                random_aspect_ratio=list(RATIO))
            images = fn.resize(images, resize_x=args.crop, resize_y=args.crop)
        else:
            images = fn.decoders.image(jpegs, device="cpu", output_type=types.RGB)
            images = fn.random_resized_crop(images, size=[args.crop, args.crop],
                                            random_area=list(SCALE),
                                            random_aspect_ratio=list(RATIO))
        images = fn.crop_mirror_normalize(
            images, dtype=types.FLOAT, output_layout="CHW", mean=[255.0 * MEAN] * 3,
            std=[255.0 * STD] * 3, mirror=fn.random.coin_flip(probability=0.5))
        return images, labels

    pipe = pipeline()
    pipe.build()
    return pipe


def dali_iterator(args, fused):
    from nvidia.dali.plugin.pytorch import DALIGenericIterator, LastBatchPolicy

    pipe = dali_pipeline(args, fused)
    iterator = DALIGenericIterator(pipe, ["images", "labels"], reader_name="Reader",
                                   last_batch_policy=LastBatchPolicy.PARTIAL, auto_reset=True)

    def epoch(_):
        for (outputs,) in iterator:
            yield outputs["images"], outputs["labels"]

    return epoch


def dali_run(args):
    """pipe.run() in a loop of the reader's epoch size, zero-copy into torch via DLPack."""
    import torch

    pipe = dali_pipeline(args, fused=True)
    size = pipe.epoch_size("Reader")

    def epoch(_):
        for start in range(0, size, args.batch):
            images, labels = pipe.run()
            count = min(args.batch, size - start)
            yield (torch.from_dlpack(images.as_tensor())[:count],
                   torch.from_dlpack(labels.as_tensor())[:count])

    return epoch


# ------------------------------------------------------------------------------------------
# SPDL
# ------------------------------------------------------------------------------------------


def spdl_epochs(args, source, stages):
    """One spdl.pipeline per epoch (as spdl.dataloader.DataLoader does): a source of shuffled
    items, then `stages` [(op, concurrency)] and `aggregate` where op is None."""
    from spdl.pipeline import PipelineBuilder

    def epoch(_):
        builder = PipelineBuilder().add_source(source())
        for op, concurrency in stages:
            if op is None:
                builder.aggregate(concurrency)
            else:
                builder.pipe(op, concurrency=concurrency)
        pipeline = builder.add_sink(3).build(num_threads=args.workers)
        with pipeline.auto_stop():
            yield from pipeline

    return epoch


def spdl_filter_decode(args):
    """A function decoding a JPEG file with FFmpeg (spdl.io) through a per-image filter graph
    that crops, scales (swscale, bilinear: area-averaging when shrinking), flips and converts
    to rgb24."""
    import spdl.io

    config = spdl.io.demux_config(format="jpeg_pipe")  # all are JPEG: skip format probing

    def decode(path):
        with open(path, "rb") as file:
            data = file.read()
        packets = spdl.io.demux_image(data, demux_config=config)
        top, left, h, w = crop_params(packets.codec.height, packets.codec.width)
        flip = ",hflip" if random.random() < 0.5 else ""
        graph = (f"crop=w={w}:h={h}:x={left}:y={top},"
                 f"scale=w={args.crop}:h={args.crop}:flags=bilinear{flip},format=pix_fmts=rgb24")
        return spdl.io.decode_packets(packets, filter_desc=graph)

    return decode


def spdl_collate(frames, labels):
    """ImageFrames (rgb24) -> one NHWC uint8 buffer (spdl.io.convert_frames) -> normalised
    NCHW float32."""
    import spdl.io
    import torch

    batch = spdl.io.to_torch(spdl.io.convert_frames(frames))
    return normalize_uint8_batch(batch.permute(0, 3, 1, 2)), torch.tensor(labels)


def spdl_ffmpeg(args):
    import torch

    torch.set_num_threads(1)  # the parallelism is the pipeline's threads
    samples, _ = scan(args.folder)
    decode = spdl_filter_decode(args)

    def load(sample):
        return decode(sample[0]), sample[1]

    def collate(items):
        return spdl_collate([frames for frames, _ in items], [label for _, label in items])

    return spdl_epochs(args, lambda: random.sample(samples, len(samples)),
                       [(load, args.workers), (None, args.batch), (collate, 1)])


def spdl_ffmpeg_batched(args):
    """The same, one pipeline task per batch (fewer event-loop round trips per image)."""
    import torch

    torch.set_num_threads(1)
    samples, _ = scan(args.folder)
    decode = spdl_filter_decode(args)

    def source():
        order = random.sample(samples, len(samples))
        return [order[i:i + args.batch] for i in range(0, len(order), args.batch)]

    def load_batch(items):
        return spdl_collate([decode(path) for path, _ in items], [label for _, label in items])

    return spdl_epochs(args, source, [(load_batch, args.workers)])


def spdl_torchvision(args):
    """spdl.io decodes to rgb24 at full size (its default filter), torchvision crops and flips
    the uint8 tensor."""
    import spdl.io
    import torch

    torch.set_num_threads(1)
    samples, _ = scan(args.folder)
    config = spdl.io.demux_config(format="jpeg_pipe")

    def load(sample):
        with open(sample[0], "rb") as file:
            data = file.read()
        buffer = spdl.io.load_image(data, demux_config=config)  # HWC uint8
        image = spdl.io.to_torch(buffer).permute(2, 0, 1)
        return tv_crop_flip(image, args.crop), sample[1]

    def collate(items):
        return stack_uint8([image for image, _ in items], [label for _, label in items])

    return spdl_epochs(args, lambda: random.sample(samples, len(samples)),
                       [(load, args.workers), (None, args.batch), (collate, 1)])


# ------------------------------------------------------------------------------------------
# torchdata.nodes
# ------------------------------------------------------------------------------------------


def torchdata_nodes(args, batched):
    import torch
    import torchdata.nodes as tn
    from torch.utils.data import BatchSampler, RandomSampler

    torch.set_num_threads(1)  # the parallelism is the mapper's threads
    samples, _ = scan(args.folder)
    sampler = RandomSampler(range(len(samples)))
    if batched:
        def load_batch(indices):
            images = [tv_crop_flip(tv_decode(samples[i][0]), args.crop) for i in indices]
            return stack_uint8(images, [samples[i][1] for i in indices])

        node = tn.SamplerWrapper(BatchSampler(sampler, args.batch, drop_last=False))
        node = tn.ParallelMapper(node, load_batch, num_workers=args.workers, method="thread",
                                 in_order=False)
    else:
        def load(index):
            path, label = samples[index]
            return tv_crop_flip(tv_decode(path), args.crop), label

        def collate(items):
            return stack_uint8([image for image, _ in items], [label for _, label in items])

        node = tn.SamplerWrapper(sampler)
        node = tn.ParallelMapper(node, load, num_workers=args.workers, method="thread",
                                 in_order=False)
        node = tn.Batcher(node, batch_size=args.batch, drop_last=False)
        node = tn.Mapper(node, collate)
    loader = tn.Loader(tn.Prefetcher(node, prefetch_factor=2))
    return lambda epoch: loader


# ------------------------------------------------------------------------------------------
# The configurations
# ------------------------------------------------------------------------------------------

PYTORCH = "PyTorch DataLoader"
CONFIGS = [
    # (id, peer, description, build(args) -> epoch(e) -> iterable of (images, labels))
    ("pytorch-pil", PYTORCH,
     "ImageFolder + PIL, v2 RandomResizedCrop/Flip on PIL then ToImage/ToDtype/Normalize, "
     "{w} worker processes",
     lambda args: pytorch_pil(args, tensor_first=False)),
    ("pytorch-pil-tensor", PYTORCH,
     "ImageFolder + PIL, v2 ToImage first: crop/flip on uint8 tensors, {w} worker processes",
     lambda args: pytorch_pil(args, tensor_first=True)),
    ("pytorch-decode_jpeg", PYTORCH,
     "read_file + torchvision.io.decode_jpeg, v2 transforms on tensors per sample, "
     "{w} worker processes",
     pytorch_decode_jpeg),
    ("pytorch-batched", PYTORCH,
     "BatchSampler + batched dataset: decode_jpeg, crop/flip per image, normalise per batch, "
     "{w} worker processes",
     pytorch_batched),
    ("pytorch-pil-draft", PYTORCH,
     "BatchSampler + batched dataset: PIL with Image.draft (reduced DCT decode), crop/resize/"
     "flip per image, normalise per batch, {w} worker processes",
     pytorch_pil_draft),
    ("dali-fused", "DALI",
     "CPU pipeline: decoders.image_random_crop + resize + crop_mirror_normalize, "
     "{w} threads, DALIGenericIterator",
     lambda args: dali_iterator(args, fused=True)),
    ("dali-fused-run", "DALI",
     "CPU pipeline: decoders.image_random_crop + resize + crop_mirror_normalize, "
     "{w} threads, pipe.run()",
     dali_run),
    ("dali-decode-crop", "DALI",
     "CPU pipeline: decoders.image + random_resized_crop + crop_mirror_normalize, "
     "{w} threads, DALIGenericIterator",
     lambda args: dali_iterator(args, fused=False)),
    ("spdl-ffmpeg", "SPDL",
     "spdl.pipeline, spdl.io decode with FFmpeg filter crop/scale/flip per image, "
     "{w} threads",
     spdl_ffmpeg),
    ("spdl-ffmpeg-batched", "SPDL",
     "spdl.pipeline, one task per batch, spdl.io decode with FFmpeg filter crop/scale/flip, "
     "{w} threads",
     spdl_ffmpeg_batched),
    ("spdl-torchvision", "SPDL",
     "spdl.pipeline, spdl.io rgb24 decode, torchvision crop/flip on tensors, {w} threads",
     spdl_torchvision),
    ("torchdata-threads", "torchdata nodes",
     "ParallelMapper threads per sample (decode_jpeg, crop/flip), Batcher, collate+normalise, "
     "{w} threads",
     lambda args: torchdata_nodes(args, batched=False)),
    ("torchdata-threads-batched", "torchdata nodes",
     "BatchSampler + ParallelMapper threads per batch (decode_jpeg, crop/flip, normalise), "
     "{w} threads",
     lambda args: torchdata_nodes(args, batched=True)),
]


# What each peer imports (and loads), done before the timer starts: a process's one-time
# imports are no part of constructing a loader.
PEER_SETUP = {
    PYTORCH: ["torch", "torchvision.datasets", "torchvision.io", "torchvision.transforms.v2"],
    "DALI": ["torch", "nvidia.dali", "nvidia.dali.fn", "nvidia.dali.plugin.pytorch"],
    "SPDL": ["torch", "torchvision.transforms.v2", "spdl.io", "spdl.pipeline"],
    "torchdata nodes": ["torch", "torchvision.io", "torchvision.transforms.v2", "torchdata.nodes"],
}


def setup(peer):
    import importlib

    for module in PEER_SETUP[peer]:
        importlib.import_module(module)
    if peer == "SPDL":
        import spdl.io

        try:  # spdl.io loads its FFmpeg bindings lazily, on first use
            spdl.io.demux_config()
        except RuntimeError as error:
            raise RuntimeError("spdl.io needs FFmpeg's shared libraries (4 to 9; on Debian 12: "
                               f"apt-get install libavdevice59 libavfilter8): {error}") from None


class Mismatch(Exception):
    pass


def check_batch(images, labels, args, first):
    """The batch's labels as an array, once its shape, dtype and (first) values are right."""
    shape = tuple(images.shape)
    if (len(shape) != 4 or shape[1:] != (3, args.crop, args.crop) or not 0 < shape[0] <= args.batch
            or str(images.dtype) not in ("torch.float32", "float32")):
        raise Mismatch(f"batch of shape {shape} and {images.dtype}, "
                       f"not (<={args.batch}, 3, {args.crop}, {args.crop}) float32")
    import numpy as np

    labels = np.asarray(labels).reshape(-1)
    if len(labels) != shape[0]:
        raise Mismatch(f"{len(labels)} labels for {shape[0]} images")
    if first:  # the values: normalised 0..255 lies in [-MEAN/STD, (1-MEAN)/STD] = [-2, 2]
        low, high = float(images.min()), float(images.max())
        if low < -MEAN / STD - 0.05 or high > (1 - MEAN) / STD + 0.05 or high - low < 0.5:
            raise Mismatch(f"values in [{low:.3f}, {high:.3f}], not normalised images")
    return labels


def measure(config, args):
    """Runs one configuration for args.epochs epochs; its JSON result (see the docstring)."""
    import numpy as np

    _, peer, description, build = config
    samples, classes = scan(args.folder)  # the expected contents, outside the timing
    expected = np.bincount([label for _, label in samples], minlength=classes)
    setup(peer)
    start = time.perf_counter()
    epoch_batches = build(args)
    first_batch_seconds = rate = None
    for epoch in range(args.epochs):
        if epoch > 0:
            start = time.perf_counter()
        count, short, seen = 0, False, np.zeros(classes, dtype=np.int64)
        for images, labels in epoch_batches(epoch):
            if count == 0 and epoch == 0:
                first_batch_seconds = time.perf_counter() - start
            labels = check_batch(images, labels, args, first=count == 0)
            if len(labels) < args.batch:  # the epoch's remainder; completion order may
                if short:  # deliver it before the epoch's last full batch
                    raise Mismatch(f"epoch {epoch}: more than one batch short of {args.batch}")
                short = True
            count += len(labels)
            seen += np.bincount(labels, minlength=classes)[:classes]
        seconds = time.perf_counter() - start
        if count != len(samples) or not np.array_equal(seen, expected):
            raise Mismatch(f"epoch {epoch}: {count} images of {len(samples)}, "
                           f"class histogram {seen.tolist()} for {expected.tolist()}")
        rate = count / seconds
    return {"peer": peer, "config": description.format(w=args.workers),
            "images_per_second": round(rate, 1),
            "first_batch_seconds": round(first_batch_seconds, 5), "images": len(samples)}


def run_child(args):
    """Measures the configuration args.child in this process and prints its JSON line."""
    config = next(c for c in CONFIGS if c[0] == args.child)
    random.seed(11)
    try:
        result = measure(config, args)
    except BaseException as error:  # noqa: BLE001 -- any failure is the peer's error line
        message = f"{config[0]}: {type(error).__name__}: {error}".replace("\n", " ")
        result = {"peer": config[1], "config": config[0], "error": message[:600]}
    print(json.dumps(result), flush=True)
    return 0


def selected(args):
    if not args.only:
        return CONFIGS
    wanted = {name.lower() for name in args.only}
    return [c for c in CONFIGS if c[0].lower() in wanted or c[1].lower() in wanted]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--folder", required=True, help="ImageFolder of JPEGs")
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--crop", type=int, default=56)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--only", nargs="+", metavar="NAME",
                        help="peer names or configuration ids to run (case-insensitive)")
    parser.add_argument("--timeout", type=float, default=1200, help="seconds per configuration")
    parser.add_argument("--list", action="store_true", help="list the configurations")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.epochs < 1:
        parser.error("--epochs must be at least 1")
    if args.child:
        return run_child(args)
    if args.list:
        for name, peer, description, _ in CONFIGS:
            print(f"{name:28} {peer:20} {description.format(w=args.workers)}")
        return 0
    configs = selected(args)
    if not configs:
        parser.error(f"--only {' '.join(args.only)} matches no configuration (see --list)")
    forwarded = ["--folder", args.folder, "--batch", str(args.batch), "--crop", str(args.crop),
                 "--workers", str(args.workers), "--epochs", str(args.epochs)]
    for name, peer, _, _ in configs:
        command = [sys.executable, os.path.abspath(__file__), *forwarded, "--child", name]
        # In a session of its own, so that a hung child goes with its worker processes.
        with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              start_new_session=True) as child:
            try:
                stdout, stderr = child.communicate(timeout=args.timeout)
            except subprocess.TimeoutExpired:
                os.killpg(child.pid, signal.SIGKILL)
                child.communicate()
                message = f"{name}: did not finish in {args.timeout:.0f} s"
                print(json.dumps({"peer": peer, "config": name, "error": message}), flush=True)
                continue
        lines = [line for line in stdout.splitlines() if line.startswith("{")]
        if lines:
            print(lines[-1], flush=True)
            if "error" in json.loads(lines[-1]) and stderr.strip():
                print(stderr.strip()[-2000:], file=sys.stderr)
            continue
        tail = (stderr.strip().splitlines() or ["no output"])[-1]
        message = f"{name}: exited with status {child.returncode}: {tail}"
        print(json.dumps({"peer": peer, "config": name, "error": message[:600]}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

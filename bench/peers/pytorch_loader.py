"""The workloads of bench/loader_bench.cpp in PyTorch's torch.utils.data.DataLoader.

Prints one `figure <name>: <value>` line per figure (medians of --repeats runs):
  overhead_ns_per_item/pytorch/w<k>    10^6 (int, float) items, batch 64, default collate
  image_samples_per_s/pytorch/w<k>     3x64x64 uint8 records of the memory-mapped file,
                                       shuffled, batch 256, normalised float32 per sample
  first_batch_s/pytorch/w2/new         a new DataLoader(num_workers=2): iter() to first batch
  first_batch_s/pytorch/w2/new_small   the same for the small-item workload (batch 64)
  first_batch_s/pytorch/w2/later       the next epoch of that loader (default: workers re-spawn)
  first_batch_s/pytorch/w2/persistent  the next epoch with persistent_workers=True
(first-batch figures use epochs of 4 batches, so the epoch before the later one is exhausted).
Steady-state figures are timed from the first batch to the end of a measured run of batches,
so worker start-up is not counted in them (it is in the first-batch figures).
"""

import argparse
import statistics
import time
import warnings

import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset

RECORD = 3 * 64 * 64


class Small(Dataset):
    """10^6 samples of (int, float), held in numpy arrays."""

    def __init__(self, n):
        self.labels = (np.arange(n) % 10).astype(np.int32)
        self.values = (np.arange(n) * 0.5).astype(np.float32)

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, i):
        return int(self.labels[i]), float(self.values[i])


class Images(Dataset):
    """Records of the memory-mapped file, each as a normalised float32 tensor of 3x64x64."""

    def __init__(self, path, n):
        self.path, self.n, self.data = path, n, None

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        if self.data is None:  # opened lazily, so each worker maps the file itself
            self.data = np.memmap(self.path, dtype=np.uint8, mode="r").reshape(-1, 3, 64, 64)
        return torch.from_numpy(np.asarray(self.data[i])).float().div_(255.0)


def timed_batches(loader, batches):
    """Seconds from the first batch to the `batches`-th after it, and the samples in them."""
    it = iter(loader)
    next(it)
    start, samples = time.perf_counter(), 0
    for _ in range(batches):
        batch = next(it)
        samples += len(batch[0]) if isinstance(batch, (list, tuple)) else len(batch)
    return time.perf_counter() - start, samples


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--images", required=True, help="the file loader_bench made")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--small-batches", type=int, default=1500, help="batches of 64 timed")
    parser.add_argument("--image-batches", type=int, default=60, help="batches of 256 timed")
    args = parser.parse_args()
    torch.set_num_threads(1)
    warnings.filterwarnings("ignore", message="The given NumPy array is not writable")
    small = Small(1_000_000)
    images = Images(args.images, 100_000)
    for workers in (0, 2):
        runs = []
        for _ in range(args.repeats):
            loader = DataLoader(small, batch_size=64, shuffle=True, num_workers=workers)
            seconds, samples = timed_batches(loader, args.small_batches)
            runs.append(seconds / samples * 1e9)
        print(f"figure overhead_ns_per_item/pytorch/w{workers}: {statistics.median(runs):.1f}",
              flush=True)
    for workers in (0, 2):
        runs = []
        for _ in range(args.repeats):
            loader = DataLoader(images, batch_size=256, shuffle=True, num_workers=workers,
                                drop_last=True)
            seconds, samples = timed_batches(loader, args.image_batches)
            runs.append(samples / seconds)
        print(f"figure image_samples_per_s/pytorch/w{workers}: {statistics.median(runs):.1f}",
              flush=True)
    runs = []
    for _ in range(args.repeats):
        start = time.perf_counter()
        loader = DataLoader(small, batch_size=64, shuffle=True, num_workers=2)
        it = iter(loader)
        next(it)
        runs.append(time.perf_counter() - start)
        del it, loader
    print(f"figure first_batch_s/pytorch/w2/new_small: {statistics.median(runs):.6f}")
    few = Images(args.images, 4 * 256)  # epochs of 4 batches, as in loader_bench
    for persistent in (False, True):
        new, later = [], []
        for _ in range(args.repeats):
            start = time.perf_counter()
            loader = DataLoader(few, batch_size=256, shuffle=True, num_workers=2,
                                drop_last=True, persistent_workers=persistent)
            it = iter(loader)
            next(it)
            new.append(time.perf_counter() - start)
            for _ in it:  # the rest of the epoch, untimed
                pass
            start = time.perf_counter()
            it = iter(loader)
            next(it)
            later.append(time.perf_counter() - start)
            for _ in it:
                pass
            del it, loader
        if not persistent:
            print(f"figure first_batch_s/pytorch/w2/new: {statistics.median(new):.6f}")
            print(f"figure first_batch_s/pytorch/w2/later: {statistics.median(later):.6f}")
        else:
            print(f"figure first_batch_s/pytorch/w2/persistent: {statistics.median(later):.6f}")


if __name__ == "__main__":
    main()

"""bench/shard_bench --throughput's workload in PyTorch: rows of big .npy shards, one rank.

The workload (the same files: shard_bench writes them to build/shard-bench, --dir here): 12
files of 720 rows x 8192 float32 (22.5 MiB each); an epoch visits the shards in a new random
order and the rows of each shard in a new random order; batches of 64 rows, stacked into one
float32 tensor [64, 8192]; 2 loader workers (the machine's 2 cores); no work per step, the files
in the page cache, several epochs. The first value of each row is its index in the data set,
so every row a batch brings is counted, and the script says whether each came exactly once.

Variants, each in a process of its own:
  worker_shards_load  the way the torchdata issue describes: an IterableDataset whose
                      DataLoader workers take whole shards by worker id (worker w of W takes
                      shards w, w + W, ... of the epoch's shard order), np.load each whole
                      (one private copy per worker), and yield its rows in a shuffled order;
                      DataLoader(batch_size=64, num_workers=2, persistent_workers=True) stacks
                      them in the worker (the default collate writes the batch straight into
                      shared memory, which the main process maps: one copy per row).
  worker_shards_mmap  the same with np.load(mmap_mode="r"): the worker maps the shard and
                      the page cache holds it, so a row is copied once, into the batch.
  shared_mmap         the shared-memory variant: a map-style Dataset whose workers map every
                      file (np.load(mmap_mode="r"), once per worker; the page cache is the
                      memory they share), a batch sampler with the same shard-aware order
                      (shards shuffled, rows within each shard shuffled, 64 at a time), and
                      __getitems__ fetching a batch with one fancy index per shard it touches
                      (the batched idiom of bench/peers/best_peers.py); num_workers=2.
  shared_mmap_w0      the same with num_workers=0: batches made in the main process, with no
                      pickling or shared memory between processes (and no worker to overlap
                      them with a training step, which this workload does not have).
Why these: per-worker shards avoid random access across files (what the issue asks for);
persistent workers keep the fork out of every epoch but the first; the default collate is
PyTorch's own path into shared memory, without an extra copy; 2 workers match the 2 cores
(stoke runs 2 worker threads); both np.load modes are run; and since with no work per step
making batches in the main process is PyTorch's fastest way here, that is run too. stoke's
samples/s is compared with the faster worker-shards variant (the torchdata issue's way) and
with the fastest variant of all.

Figures per variant: samples/s (rows delivered over the epoch's wall time, the mean over
epochs 2..N, as shard_bench does); the first batch (from making the dataset and DataLoader to
the first batch, the workers' start included); peak RSS of the process tree: the sum of the
VmHWM (peak resident set) of the main process and of each worker, read from /proc after the
last epoch, while the persistent workers live (a page that several processes share, such as
torch's libraries and the memory a worker inherits from the fork, counts in each); what the
loader added: the same sum less each process's RSS at its start (main's before the loader is
made, a worker's when its worker_init_fn runs); main's RSS before the loader (the interpreter,
numpy and torch); bytes read per epoch over the data set's bytes (the file bytes each worker
loads or maps, counted in a shared counter; for the shared_mmap variants, the bytes of the rows
they fetch); whether every row came exactly once in every epoch (an epoch that did not is
printed with its counts), and the batches an epoch has and how many are not full.

With --stoke FILE (shard_bench --throughput's output) it prints `ratio <name>: <x>` lines:
stoke's samples/s over the peer's and over PyTorch's fastest variant's, stoke's peak RSS over
the peer's tree's, and what stoke's loader added to its RSS over what the peer's added.
"""
import argparse
import json
import multiprocessing
import os
import re
import subprocess
import sys
import time
import warnings

import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset, IterableDataset, get_worker_info

BATCH, WORKERS, SEED = 64, 2, 3
VARIANTS = ("worker_shards_load", "worker_shards_mmap", "shared_mmap", "shared_mmap_w0")
WORKER_SHARDS = VARIANTS[:2]


def status_kib(pid, key):
    """A field of /proc/<pid>/status in KiB (VmHWM: peak RSS, VmRSS: RSS now)."""
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    raise KeyError(key)


def children(pid):
    """The pids of the processes whose parent is `pid` (the DataLoader's workers)."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as stat:
                    if int(stat.read().rsplit(")", 1)[1].split()[1]) == pid:
                        found.append(int(entry))
            except (FileNotFoundError, ProcessLookupError):
                pass
    return found


class note_start:
    """worker_init_fn: notes the worker's RSS as it starts, before it loads anything."""

    def __init__(self, starts):
        self.starts = starts

    def __call__(self, worker):
        self.starts[worker] = status_kib(os.getpid(), "VmRSS")


def epoch_order(n_shards, epoch):
    return np.random.default_rng((SEED, epoch)).permutation(n_shards)


def row_order(rows, epoch, shard):
    return np.random.default_rng((SEED, epoch, shard)).permutation(rows)


class WorkerShards(IterableDataset):
    """Each worker takes whole shards by worker id, loads one at a time, yields its rows."""

    def __init__(self, files, mmap, loaded):
        self.files, self.mmap, self.loaded, self.epoch = files, mmap, loaded, 0

    def rows(self, shard):
        # A function of its own, so that a shard is freed as soon as its rows are yielded.
        path = self.files[shard]
        array = np.load(path, mmap_mode="r" if self.mmap else None)
        with self.loaded.get_lock():
            self.loaded.value += os.path.getsize(path)
        for r in row_order(len(array), self.epoch, shard):
            yield torch.from_numpy(array[r])

    def __iter__(self):
        info = get_worker_info()
        worker, workers = (info.id, info.num_workers) if info else (0, 1)
        mine = epoch_order(len(self.files), self.epoch)[worker::workers]
        self.epoch += 1  # every worker's copy counts epochs alike
        for shard in mine:
            yield from self.rows(shard)


class SharedMmap(Dataset):
    """Every row of every file; each process maps the files once, the page cache shares them."""

    def __init__(self, files, loaded):
        self.files, self.loaded, self.maps = files, loaded, None
        self.rows = [np.load(f, mmap_mode="r").shape[0] for f in files]
        self.begins = np.cumsum([0] + self.rows)

    def __len__(self):
        return int(self.begins[-1])

    def __getitems__(self, indices):
        """One batch: a fancy index into each shard it touches (one, or two at a shard's end)."""
        if self.maps is None:
            self.maps = [np.load(f, mmap_mode="r") for f in self.files]
        indices = np.asarray(indices)
        shards = np.searchsorted(self.begins, indices, side="right") - 1
        parts = [self.maps[s][indices[shards == s] - self.begins[s]] for s in np.unique(shards)]
        batch = torch.from_numpy(parts[0] if len(parts) == 1 else np.concatenate(parts))
        with self.loaded.get_lock():
            self.loaded.value += batch.nbytes
        return batch


def as_is(batch):
    """The collate of a dataset whose __getitems__ makes the batch."""
    return batch


class ShardAwareBatches:
    """Batches of the shard-aware order: shards shuffled, rows within a shard shuffled."""

    def __init__(self, rows, begins):
        self.rows, self.begins, self.epoch = rows, begins, 0

    def __len__(self):
        return -(-sum(self.rows) // BATCH)

    def __iter__(self):
        order = np.concatenate([self.begins[s] + row_order(self.rows[s], self.epoch, s)
                                for s in epoch_order(len(self.rows), self.epoch)])
        self.epoch += 1
        for k in range(0, len(order), BATCH):
            yield order[k:k + BATCH].tolist()


def run_variant(args):
    """One variant in this process; returns its figures (and prints an epoch not exact)."""
    warnings.filterwarnings("ignore", message="The given NumPy array is not writable")
    files = [os.path.join(args.dir, f"shard_{s}.npy") for s in range(args.shards)]
    baseline = status_kib(os.getpid(), "VmRSS")
    loaded = multiprocessing.Value("q", 0)
    worker_start = multiprocessing.Array("q", WORKERS)  # each worker's RSS when it starts
    start = time.perf_counter()
    if args.variant.startswith("shared_mmap"):
        dataset = SharedMmap(files, loaded)
        workers = 0 if args.variant.endswith("w0") else WORKERS
        loader = DataLoader(dataset, batch_sampler=ShardAwareBatches(dataset.rows, dataset.begins),
                            collate_fn=as_is, num_workers=workers,
                            persistent_workers=workers > 0, worker_init_fn=note_start(worker_start))
    else:
        dataset = WorkerShards(files, args.variant.endswith("mmap"), loaded)
        loader = DataLoader(dataset, batch_size=BATCH, num_workers=WORKERS,
                            persistent_workers=True, worker_init_fn=note_start(worker_start))
    first = np.load(files[0], mmap_mode="r")
    samples = len(files) * first.shape[0]
    data_bytes = samples * first[0].nbytes
    first_batch, rates, exact, bytes_read = None, [], True, []
    for epoch in range(args.epochs):
        seen = np.zeros(samples, np.int64)
        batches = partial = rows = 0
        loaded.value = 0
        began = time.perf_counter()
        for batch in loader:
            if first_batch is None:
                first_batch = time.perf_counter() - start
            seen += np.bincount(batch[:, 0].numpy().astype(np.int64), minlength=samples)
            batches += 1
            partial += len(batch) < BATCH
            rows += len(batch)
        seconds = time.perf_counter() - began
        rates.append(rows / seconds)
        bytes_read.append(loaded.value / data_bytes)
        once, never = int((seen == 1).sum()), int((seen == 0).sum())
        exact = exact and once == samples
        if once != samples:
            print(f"  epoch {epoch + 1}: rows seen once {once}, never {never}, more than once "
                  f"{samples - once - never}", flush=True)
    pids = [os.getpid()] + children(os.getpid())
    peaks = [status_kib(p, "VmHWM") for p in pids]
    starts = [baseline] + [kib for kib in worker_start[:len(pids) - 1]]
    del loader
    later = rates[1:] if len(rates) > 1 else rates
    return {"variant": args.variant, "samples_per_s": sum(later) / len(later),
            "first_batch_ms": first_batch * 1e3, "peak_rss_mib": sum(peaks) / 1024,
            "peak_rss_each_mib": [p / 1024 for p in peaks], "baseline_mib": baseline / 1024,
            "added_mib": (sum(peaks) - sum(starts)) / 1024,
            "bytes_per_epoch": sum(bytes_read) / len(bytes_read), "exactly_once": exact,
            "batches": batches, "partial": partial}


def stoke_figures(path):
    """samples/s, peak RSS and the RSS before the loader from shard_bench --throughput."""
    with open(path) as out:
        for line in out:
            m = re.match(r"stoke throughput: (\d+) samples/s, .*peak RSS (\d+) MiB "
                         r"\((\d+) MiB before the loader\)", line)
            if m:
                return dict(zip(("samples_per_s", "peak_rss_mib", "before_mib"),
                                map(float, m.groups())))
    raise SystemExit(f"pytorch_shards: no 'stoke throughput' line in {path}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dir", default="build/shard-bench", help="shard_bench's files")
    parser.add_argument("--shards", type=int, default=12, help="files: shard_0.npy ...")
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--stoke", help="shard_bench --throughput's output, for the ratios")
    parser.add_argument("--variant", choices=VARIANTS, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.variant:
        print(json.dumps(run_variant(args)))
        return

    print(f"# pytorch {torch.__version__}, numpy {np.__version__}, python "
          f"{sys.version.split()[0]}; {WORKERS} workers (persistent), batch {BATCH}, "
          f"{args.epochs} epochs; peak RSS: the sum of VmHWM of main and workers", flush=True)
    results = {}
    for variant in VARIANTS:
        child = subprocess.run([sys.executable, __file__, "--dir", args.dir, "--shards",
                                str(args.shards), "--epochs", str(args.epochs),
                                "--variant", variant],
                               capture_output=True, text=True)
        lines = child.stdout.splitlines()
        for line in lines[:-1]:
            print(line)
        if child.returncode != 0 or not lines:
            print(f"skip {variant}: exit {child.returncode}: {child.stderr.strip()[-500:]}")
            continue
        r = results[variant] = json.loads(lines[-1])
        each = " + ".join(f"{m:.0f}" for m in r["peak_rss_each_mib"])
        print(f"pytorch {variant}: {r['samples_per_s']:.0f} samples/s, first batch "
              f"{r['first_batch_ms']:.1f} ms, peak RSS of the tree {r['peak_rss_mib']:.0f} MiB "
              f"({each}; {r['added_mib']:.0f} MiB over each process's RSS at its start), "
              f"main's RSS before the loader {r['baseline_mib']:.0f} MiB, bytes read per epoch "
              f"{r['bytes_per_epoch']:.2f}, exactly once {'yes' if r['exactly_once'] else 'no'}, "
              f"{r['batches']} batches an epoch of which {r['partial']} not full", flush=True)
    worker_shards = [v for v in WORKER_SHARDS if v in results]
    if args.stoke and worker_shards:
        peer = max(worker_shards, key=lambda v: results[v]["samples_per_s"])
        fastest = max(results, key=lambda v: results[v]["samples_per_s"])
        stoke = stoke_figures(args.stoke)
        r = results[peer]
        print(f"the PyTorch peer: {peer} (the faster of the torchdata issue's way), "
              f"{r['samples_per_s']:.0f} samples/s, peak RSS of the tree {r['peak_rss_mib']:.0f} "
              f"MiB, {r['added_mib']:.0f} MiB over its processes' RSS at their start")
        print(f"PyTorch's fastest: {fastest}, {results[fastest]['samples_per_s']:.0f} samples/s")
        print(f"ratio shard_stoke_over_pytorch_samples_per_s: "
              f"{stoke['samples_per_s'] / r['samples_per_s']:.2f}")
        print(f"ratio shard_stoke_over_pytorch_fastest_samples_per_s: "
              f"{stoke['samples_per_s'] / results[fastest]['samples_per_s']:.2f}")
        print(f"ratio shard_stoke_over_pytorch_peak_rss: "
              f"{stoke['peak_rss_mib'] / r['peak_rss_mib']:.3f}")
        added = stoke["peak_rss_mib"] - stoke["before_mib"]
        print(f"ratio shard_stoke_over_pytorch_rss_added: {added / r['added_mib']:.3f}"
              "  # peak RSS over the RSS before the loader (each process's at its start)")


if __name__ == "__main__":
    main()

"""The workloads of bench/loader_bench.cpp in other loaders, each at the idiom an expert picks.

bench/peers/pytorch_loader.py runs PyTorch's DataLoader the way most of its users write it
(one `__getitem__` per item, the default collate); this script runs the same workloads the way
each library's documentation recommends for speed: one fetch per batch (numpy fancy indexing
into the arrays or the memory-mapped file) and normalisation vectorised over the batch.

  pytorch_batched  torch.utils.data.DataLoader(dataset, sampler=BatchSampler(RandomSampler),
                   batch_size=None, num_workers=k): `__getitem__` takes a list of indices
  torchdata        torchdata.nodes: SamplerWrapper(BatchSampler) -> ParallelMapper(method=
                   "thread", num_workers=k) -> Prefetcher -> Loader
  grain            grain.MapDataset over the index batches of a permutation .map(fetch) ->
                   to_iter_dataset with k read threads, or mp_prefetch with k worker processes
                   (and MapDataset.range(n).shuffle().batch().map(fetch), per element)
  tfdata           tf.data: Dataset.range(n).shuffle(n).batch() -> map(numpy_function fetch) ->
                   map(cast and scale, vectorised) -> prefetch(AUTOTUNE), parallel calls AUTOTUNE
  dali             NVIDIA DALI CPU pipeline (device_id=None, k threads): fn.external_source of
                   batches from the memmap, then fn.crop_mirror_normalize or arithmetic
  spdl             spdl.pipeline: a source of index batches -> pipe(fetch, concurrency=k) on a
                   pool of k threads

Workloads (as in loader_bench and pytorch_loader.py):
  overhead_ns_per_item/<peer>/<config>    10^6 (int, float) items, shuffled, batch 64
  image_samples_per_s/<peer>/<config>     3x64x64 uint8 records of the memory-mapped file,
                                          shuffled, batch 256, normalised float32
  first_batch_s/<peer>/<config>/new       a new loader over 4 x 256 records: build to 1st batch
  first_batch_s/<peer>/<config>/new_small the same for the small items (batch 64)
Each is the median of --repeats runs (one run where it took over 5 s); steady-state figures are timed from the first batch on
(worker start-up is in the first-batch figures), over --small-batches or --image-batches.

Each peer runs in a child process of its own (so no thread pool or worker of one lingers into
the next); a peer whose library is missing or fails prints `skip <peer>: <reason>` and the
others go on. Prints `figure <name>: <value>` lines, and `config <peer>/<config>: <text>`
lines saying what each configuration runs.

Usage: best_peers.py --images FILE [--only PEER ...] [--repeats 3]
"""

import argparse
import os
import statistics
import subprocess
import sys
import time

RECORD = (3, 64, 64)
IMAGE_RECORDS = 100_000
SMALL_ITEMS = 1_000_000
IMAGE_BATCH, SMALL_BATCH = 256, 64
SCALE = 1.0 / 255.0
WORKERS = 2  # the machine's cores, as in loader_bench

# ------------------------------------------------------------------------------------------
# The batched fetches every peer uses (module level, so worker processes can unpickle them)
# ------------------------------------------------------------------------------------------

_images = None
_small = None
IMAGES_PATH = None


def images():
    """The memory-mapped records, opened once per process."""
    global _images
    if _images is None:
        import numpy as np
        path = IMAGES_PATH or os.environ["STOKE_BENCH_IMAGES"]
        _images = np.memmap(path, dtype=np.uint8, mode="r").reshape(-1, *RECORD)
    return _images


def small():
    """The 10^6 (int, float) items as two numpy arrays."""
    global _small
    if _small is None:
        import numpy as np
        n = np.arange(SMALL_ITEMS)
        _small = ((n % 10).astype(np.int32), (n * 0.5).astype(np.float32))
    return _small


def fetch_images(indices):
    """One batch: the records at `indices`, gathered, as normalised float32 (one pass)."""
    import numpy as np
    raw = images()[np.asarray(indices)]
    out = np.empty(raw.shape, np.float32)
    np.multiply(raw, np.float32(SCALE), out=out)
    return out


def fetch_raw(indices):
    import numpy as np
    return np.ascontiguousarray(images()[np.asarray(indices)])


def fetch_small(indices):
    import numpy as np
    labels, values = small()
    indices = np.asarray(indices)
    return labels[indices], values[indices]


def count(batch):
    """Samples in a batch (a tuple of arrays, a dict, or one array)."""
    if isinstance(batch, dict):
        batch = next(iter(batch.values()))
    if isinstance(batch, (list, tuple)):
        batch = batch[0]
    return len(batch)


# ------------------------------------------------------------------------------------------
# The peers. Each `build(workload, config, n)` returns a new loader: an iterable whose iter()
# starts an epoch of n samples (workload "small": batch 64, "image": batch 256).
# ------------------------------------------------------------------------------------------


class PytorchBatched:
    name = "pytorch_batched"
    modules = ["torch"]
    configs = {"w0": "num_workers=0 (the caller's thread)",
               "w2": "num_workers=2 (worker processes)"}

    def setup(self):
        import torch
        torch.set_num_threads(1)

    def build(self, workload, config, n):
        import torch
        from torch.utils.data import BatchSampler, DataLoader, Dataset, RandomSampler

        class Batched(Dataset):
            def __len__(self):
                return n

            def __getitem__(self, indices):
                if workload == "image":
                    return torch.from_numpy(fetch_images(indices))
                labels, values = fetch_small(indices)
                return torch.from_numpy(labels), torch.from_numpy(values)

        batch = IMAGE_BATCH if workload == "image" else SMALL_BATCH
        dataset = Batched()
        sampler = BatchSampler(RandomSampler(range(n)), batch, drop_last=False)
        return DataLoader(dataset, sampler=sampler, batch_size=None,
                          num_workers=int(config[1:]))


class Torchdata:
    name = "torchdata"
    modules = ["torch", "torchdata.nodes"]
    configs = {"t2": "ParallelMapper(num_workers=2, method='thread', in_order=True)",
               "t2_unordered": "ParallelMapper(num_workers=2, method='thread', in_order=False)",
               "t1": "ParallelMapper(num_workers=1, method='thread')"}

    def setup(self):
        import torch
        torch.set_num_threads(1)

    def build(self, workload, config, n):
        import torch
        import torchdata.nodes as tn
        from torch.utils.data import BatchSampler, RandomSampler

        batch = IMAGE_BATCH if workload == "image" else SMALL_BATCH

        def load(indices):
            if workload == "image":
                return torch.from_numpy(fetch_images(indices))
            labels, values = fetch_small(indices)
            return torch.from_numpy(labels), torch.from_numpy(values)

        node = tn.SamplerWrapper(BatchSampler(RandomSampler(range(n)), batch, drop_last=False))
        node = tn.ParallelMapper(node, load, num_workers=int(config[1]), method="thread",
                                 in_order=not config.endswith("unordered"))
        return tn.Loader(tn.Prefetcher(node, prefetch_factor=2))


class GrainBatches:
    """The index batches of an epoch, gathered by the fetch (picklable: worker processes)."""

    def __init__(self, order, batch, workload):
        self.order, self.batch, self.workload = order, batch, workload

    def __call__(self, b):
        indices = self.order[b * self.batch:(b + 1) * self.batch]
        return fetch_images(indices) if self.workload == "image" else fetch_small(indices)


class Grain:
    name = "grain"
    modules = ["grain"]
    configs = {
        "w0": "MapDataset of index batches (a permutation per epoch) .map(fetch), "
              "to_iter_dataset(ReadOptions(num_threads=0)): the caller's thread",
        "t2": "the same with ReadOptions(num_threads=2): 2 read threads",
        "w2": "the same with mp_prefetch(MultiprocessingOptions(num_workers=2)): 2 worker "
              "processes",
        "w0_elementwise": "MapDataset.range(n).shuffle().batch().map(fetch) (grain shuffles "
                          "and batches per element), the caller's thread",
    }

    def build(self, workload, config, n):
        import grain
        import numpy as np

        batch = IMAGE_BATCH if workload == "image" else SMALL_BATCH
        fetch = fetch_images if workload == "image" else fetch_small

        class Epochs:  # a new shuffle per epoch, as the other loaders reshuffle
            def __init__(self):
                self.epoch = 0

            def __iter__(self):
                self.epoch += 1
                if config == "w0_elementwise":
                    ds = grain.MapDataset.range(n).shuffle(seed=self.epoch).batch(batch)
                    ds = ds.map(fetch)
                else:
                    order = np.random.default_rng(self.epoch).permutation(n)
                    ds = grain.MapDataset.range(-(-n // batch)).map(
                        GrainBatches(order, batch, workload))
                if config == "w2":
                    it = ds.to_iter_dataset(grain.ReadOptions(num_threads=0)).mp_prefetch(
                        grain.MultiprocessingOptions(num_workers=2))
                else:
                    threads = 2 if config == "t2" else 0
                    it = ds.to_iter_dataset(grain.ReadOptions(num_threads=threads,
                                                              prefetch_buffer_size=4))
                return iter(it)

        return Epochs()


class Tfdata:
    name = "tfdata"
    modules = ["tensorflow"]
    configs = {"autotune": "numpy_function fetch of uint8, then cast and scale in TF, "
                           "num_parallel_calls=AUTOTUNE, prefetch(AUTOTUNE)",
               "autotune_np": "numpy_function fetch and normalise in numpy, "
                              "num_parallel_calls=AUTOTUNE, prefetch(AUTOTUNE)",
               "t2": "as autotune, on a private thread pool of 2 threads"}

    def setup(self):
        os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
        import tensorflow as tf
        tf.config.threading.set_inter_op_parallelism_threads(WORKERS)
        tf.config.threading.set_intra_op_parallelism_threads(WORKERS)

    def build(self, workload, config, n):
        import tensorflow as tf

        batch = IMAGE_BATCH if workload == "image" else SMALL_BATCH
        auto = tf.data.AUTOTUNE
        ds = tf.data.Dataset.range(n).shuffle(n, reshuffle_each_iteration=True).batch(batch)
        if workload == "image":
            if config == "autotune_np":
                ds = ds.map(lambda i: tf.numpy_function(fetch_images, [i], tf.float32),
                            num_parallel_calls=auto)
            else:
                ds = ds.map(lambda i: tf.numpy_function(fetch_raw, [i], tf.uint8),
                            num_parallel_calls=auto)
                ds = ds.map(lambda x: tf.cast(x, tf.float32) * SCALE, num_parallel_calls=auto)
        else:
            ds = ds.map(lambda i: tf.numpy_function(fetch_small, [i], (tf.int32, tf.float32)),
                        num_parallel_calls=auto)
        ds = ds.prefetch(auto)
        if config == "t2":
            options = tf.data.Options()
            options.threading.private_threadpool_size = 2
            ds = ds.with_options(options)
        return ds


class Dali:
    name = "dali"
    modules = ["nvidia.dali", "nvidia.dali.fn"]
    configs = {"t2": "2 threads, fn.crop_mirror_normalize(mean 0, std 255) to float32",
               "t2_arith": "2 threads, fn.cast to float32 then multiplied by 1/255",
               "t1": "1 thread, fn.crop_mirror_normalize"}

    def build(self, workload, config, n):
        import numpy as np
        from nvidia.dali import fn, pipeline_def, types

        batch = IMAGE_BATCH if workload == "image" else SMALL_BATCH
        threads = int(config[1])
        rng = np.random.default_rng()

        class Source:  # the index batches of one epoch; StopIteration ends it
            def __init__(self):
                self.order, self.at = rng.permutation(n), 0

            def __iter__(self):
                self.order, self.at = rng.permutation(n), 0
                return self

            def __next__(self):
                if self.at >= n:
                    raise StopIteration
                indices = self.order[self.at:self.at + batch]
                self.at += batch
                if workload == "image":
                    return fetch_raw(indices)
                labels, values = fetch_small(indices)
                return labels, values

        @pipeline_def(batch_size=batch, num_threads=threads, device_id=None,
                      prefetch_queue_depth=2)
        def pipeline():
            if workload == "image":
                raw = fn.external_source(source=Source(), batch=True, layout="CHW",
                                         dtype=types.UINT8, no_copy=True)
                if config == "t2_arith":
                    return fn.cast(raw, dtype=types.FLOAT) * SCALE
                return fn.crop_mirror_normalize(raw, dtype=types.FLOAT, output_layout="CHW",
                                                mean=[0.0], std=[255.0])
            labels, values = fn.external_source(source=Source(), batch=True, num_outputs=2,
                                                no_copy=True)
            return labels, values

        class Loader:
            def __iter__(self):
                pipe = pipeline()
                pipe.build()
                return self.run(pipe)

            @staticmethod
            def run(pipe):
                while True:
                    try:
                        outputs = pipe.run()
                    except StopIteration:
                        return
                    yield tuple(np.asarray(o.as_tensor()) for o in outputs)  # no copy

        return Loader()


class Spdl:
    name = "spdl"
    modules = ["spdl.pipeline"]
    configs = {"t2": "pipe(fetch, concurrency=2), build(num_threads=2)",
               "t1": "pipe(fetch, concurrency=1), build(num_threads=1)"}

    def build(self, workload, config, n):
        import numpy as np
        from spdl.pipeline import PipelineBuilder

        batch = IMAGE_BATCH if workload == "image" else SMALL_BATCH
        fetch = fetch_images if workload == "image" else fetch_small
        threads = int(config[1])

        class Loader:  # one pipeline per epoch, as spdl.dataloader.DataLoader does
            def __iter__(self):
                order = np.random.permutation(n)
                source = [order[i:i + batch] for i in range(0, n, batch)]
                pipeline = (PipelineBuilder().add_source(source)
                            .pipe(fetch, concurrency=threads).add_sink(3)
                            .build(num_threads=threads))
                with pipeline.auto_stop():
                    yield from pipeline

        return Loader()


PEERS = [PytorchBatched(), Torchdata(), Grain(), Tfdata(), Dali(), Spdl()]


# ------------------------------------------------------------------------------------------
# Measurement
# ------------------------------------------------------------------------------------------


def steady(loader, batches):
    """Seconds from the first batch to the `batches`-th after it, and the samples in them."""
    it = iter(loader)
    next(it)
    start, samples = time.perf_counter(), 0
    for _ in range(batches):
        samples += count(next(it))
    seconds = time.perf_counter() - start
    for _ in it:  # end the epoch, so the loader's threads or workers stop cleanly
        pass
    return seconds, samples


def first_batch(peer, workload, config, n):
    start = time.perf_counter()
    loader = peer.build(workload, config, n)
    it = iter(loader)
    next(it)
    seconds = time.perf_counter() - start
    for _ in it:
        pass
    return seconds


def repeated(measure, repeats):
    """`repeats` runs of measure() (fewer when one takes over 5 s: slow-starting workers)."""
    runs = []
    for _ in range(repeats):
        start = time.perf_counter()
        runs.append(measure())
        if time.perf_counter() - start > 5:
            break
    return statistics.median(runs)


def run_peer(peer, args):
    import importlib
    for module in peer.modules:
        importlib.import_module(module)
    if hasattr(peer, "setup"):
        peer.setup()
    for config, text in peer.configs.items():
        print(f"config {peer.name}/{config}: {text}", flush=True)
    small_items = min(SMALL_ITEMS, (args.small_batches + 2) * SMALL_BATCH)
    image_records = min(IMAGE_RECORDS, (args.image_batches + 2) * IMAGE_BATCH)
    for config in peer.configs:
        def measure():
            seconds, samples = steady(peer.build("small", config, small_items),
                                      args.small_batches)
            return seconds / samples * 1e9
        print(f"figure overhead_ns_per_item/{peer.name}/{config}: "
              f"{repeated(measure, args.repeats):.1f}", flush=True)
    for config in peer.configs:
        def measure():
            seconds, samples = steady(peer.build("image", config, image_records),
                                      args.image_batches)
            return samples / seconds
        print(f"figure image_samples_per_s/{peer.name}/{config}: "
              f"{repeated(measure, args.repeats):.1f}", flush=True)
    for config in peer.configs:
        new = repeated(lambda: first_batch(peer, "image", config, 4 * IMAGE_BATCH), args.repeats)
        print(f"figure first_batch_s/{peer.name}/{config}/new: {new:.6f}", flush=True)
        new = repeated(lambda: first_batch(peer, "small", config, 4 * SMALL_BATCH), args.repeats)
        print(f"figure first_batch_s/{peer.name}/{config}/new_small: {new:.6f}", flush=True)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--images", required=True, help="the file loader_bench made")
    parser.add_argument("--repeats", type=int, default=3)
    # Longer than pytorch_loader.py's runs: these loaders are faster, and a short run would
    # also count the batches prefetched while the first one was awaited.
    parser.add_argument("--small-batches", type=int, default=5000, help="batches of 64 timed")
    parser.add_argument("--image-batches", type=int, default=300, help="batches of 256 timed")
    parser.add_argument("--only", nargs="*", help="peer names")
    parser.add_argument("--timeout", type=float, default=600, help="seconds per peer")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    global IMAGES_PATH
    IMAGES_PATH = os.path.abspath(args.images)
    os.environ["STOKE_BENCH_IMAGES"] = IMAGES_PATH  # for worker processes
    if args.child:
        run_peer(next(p for p in PEERS if p.name == args.child), args)
        return
    for peer in PEERS:
        if args.only and peer.name not in args.only:
            continue
        command = [sys.executable, os.path.abspath(__file__), "--child", peer.name,
                   "--images", IMAGES_PATH, "--repeats", str(args.repeats),
                   "--small-batches", str(args.small_batches),
                   "--image-batches", str(args.image_batches)]
        env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", PYTHONWARNINGS="ignore")
        try:
            child = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                   text=True, timeout=args.timeout, env=env)
            out, err, rc = child.stdout, child.stderr, child.returncode
        except subprocess.TimeoutExpired as e:
            out = e.stdout.decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
            err, rc = f"timed out after {args.timeout:.0f} s", "timeout"
        sys.stdout.write(out)
        if rc != 0:
            lines = [line for line in err.strip().splitlines() if line.strip()]
            reason = lines[-1] if lines else f"exit status {rc}"
            print(f"skip {peer.name}: {reason} (exit status {rc})", flush=True)
        sys.stdout.flush()


if __name__ == "__main__":
    main()

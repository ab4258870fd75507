"""stoke from Python, side by side in one run with stoke from C++ and the Python peers.

The workloads are those of `scripts/bench --peers` (bench/loader_bench.cpp, and the peers of
bench/peers/best_peers.py at their experts' idiom) and, once the package reads image folders
(`stoke_loader.image_folder`), the JPEG workload of `scripts/image-bench`:

  overhead    10^6 (int32, float32) items in two NumPy arrays, shuffled, batch 64
  image       3x64x64 uint8 records of the memory-mapped file (build/default/bench/data/
              images.u8), shuffled, batch 256, handed to the training loop as normalised
              float32 (x / 255), as loader_bench's StackBatcher and every peer give them
  first batch a new loader (2 workers): construction to its first batch, over the records
              (batch 256) and over the small items (batch 64)
  jpeg        the JPEG folder of scripts/image-bench: decode, random resized crop to 56, flip,
              normalise, batch 256, 2 threads (bench/image_bench.cpp and the best configuration
              of each peer of bench/peers/image_peers.py)

Nothing here re-implements a peer: the peers, their fetches and the timing (steady state from
the first batch on; first batch from constructing the loader) are best_peers.py's and
image_peers.py's own; stoke_loader is added as one more peer with the same interface
(`StokePython`), measured by the same functions in a child process of its own, as each peer is.
stoke's C++ figures come from the C++ programs themselves (loader_bench, image_bench), run in
the same invocation, so the ratio Python over C++ is measured side by side.

stoke_loader's configurations (what its user writes; see book/docs/from-python.md):
  w0, w1, w2   Loader({"image": sl.scaled(the np.memmap of the records, 1/255)},
               batch_size=256, shuffle=True, num_workers=0/1/2, queue_depth=4,
               remainder="drop"): the workers normalise as they batch (as StackBatcher does in
               C++), the training loop takes each batch with np.from_dlpack (no copy)
  w2_records   the same over sl.records(path, uint8, (3, 64, 64)) (the file opened by stoke)
  w2_u8        the uint8 rows as they come, not normalised (what the loader itself hands over;
               normalising on the GPU after the upload moves a quarter of the bytes)
  w2_transform the normalisation as the loader's transform= (called in the iterating thread)

Usage: python_bench.py --images FILE --loader-bench PROGRAM [--image-bench PROGRAM
                        --jpeg-dir DIR] [--peers NAME ...] [--repeats 3] [--quick]
Prints the report (Markdown tables and `ratio <name>: <x>` lines) on stdout.
"""

from __future__ import annotations

import argparse
import inspect
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "bench", "peers"))

import best_peers  # noqa: E402  the peers at their experts' idiom, and how they are timed
import report  # noqa: E402  medians of Google Benchmark JSON, `figure` and `config` lines

STOKE = "stoke_python"
PEER_NAMES = {  # best_peers.py's peers, as the tables name them
    "pytorch_batched": "PyTorch DataLoader (batched fetch)",
    "torchdata": "torchdata.nodes",
    "grain": "Grain",
    "tfdata": "tf.data",
    "dali": "NVIDIA DALI (CPU)",
    "spdl": "SPDL",
}
# The best configuration of each peer of image_peers.py in book/results/image_bench.txt (the
# full set takes several minutes; scripts/image-bench runs them all).
JPEG_PEER_CONFIGS = ["pytorch-batched", "dali-fused", "spdl-ffmpeg-batched",
                     "torchdata-threads-batched"]
TARGET_VS_CPP, TARGET_VS_PEER = 0.9, 2.0


# ------------------------------------------------------------------------------------------
# stoke_loader as one more peer of best_peers.py
# ------------------------------------------------------------------------------------------


def has_transform():
    import stoke_loader as sl
    return "transform" in inspect.signature(sl.Loader.__init__).parameters


class StokePython:
    """stoke_loader with best_peers.py's interface: build(workload, config, n) -> a loader
    whose iter() begins an epoch and yields what the training loop takes (NumPy arrays)."""

    name = STOKE
    modules = ["stoke_loader"]
    configs = {
        "w0": "Loader(sl.scaled(images, 1/255), num_workers=0): the caller's thread "
              "normalises as it batches (as StackBatcher in C++); np.from_dlpack, no copy",
        "w1": "num_workers=1, the same",
        "w2": "num_workers=2, queue_depth=4, the same",
        "w2_records": "num_workers=2 over sl.scaled(sl.records(path, uint8, (3, 64, 64)), "
                      "1/255)",
        "w2_u8": "num_workers=2, the uint8 rows as they come (np.from_dlpack, no copy, "
                 "not normalised)",
        "w2_transform": "num_workers=2, normalised by transform= (the iterating thread)",
    }
    small_configs = ["w0", "w1", "w2"]
    image_configs = ["w0", "w1", "w2", "w2_records", "w2_u8", "w2_transform"]
    first_batch_configs = ["w2", "w2_records", "w2_u8", "w2_transform"]

    def available(self, config):
        return config != "w2_transform" or has_transform()

    def build(self, workload, config, n):
        import numpy as np
        import stoke_loader as sl

        workers = int(config[1])
        scale = np.float32(best_peers.SCALE)
        if workload == "small":
            labels, values = best_peers.small()
            loader = sl.Loader({"label": labels[:n], "value": values[:n]},
                               batch_size=best_peers.SMALL_BATCH, shuffle=True, seed=42,
                               num_workers=workers, queue_depth=4)
            return Epochs(loader, lambda b: (np.from_dlpack(b["label"]),
                                             np.from_dlpack(b["value"])))
        if config == "w2_records":  # the file opened by stoke, over all of its records
            column = sl.records(best_peers.IMAGES_PATH, np.uint8, best_peers.RECORD)
        else:  # the mapping the peers read (opened once per process), read in place
            column = best_peers.images()[:n]
        options = dict(batch_size=best_peers.IMAGE_BATCH, shuffle=True, seed=7,
                       num_workers=workers, queue_depth=4, remainder="drop")

        def normalise(raw):
            out = np.empty(raw.shape, np.float32)
            out[...] = raw
            out *= scale
            return out

        if config == "w2_transform":
            def transform(batch):
                return {"image": normalise(np.from_dlpack(batch["image"]))}
            loader = sl.Loader({"image": column}, transform=transform, **options)
            return Epochs(loader, lambda b: (np.from_dlpack(b["image"]),))
        if config == "w2_u8":
            loader = sl.Loader({"image": column}, **options)
            return Epochs(loader, lambda b: (np.from_dlpack(b["image"]),))
        # The workers normalise as they batch, as loader_bench's StackBatcher does in C++.
        loader = sl.Loader({"image": sl.scaled(column, scale)}, **options)
        return Epochs(loader, lambda b: (np.from_dlpack(b["image"]),))


class Epochs:
    """A loader whose iter() yields each batch as the training loop takes it."""

    def __init__(self, loader, take):
        self.loader, self.take = loader, take

    def __iter__(self):
        take = self.take
        return (take(batch) for batch in self.loader)


def run_stoke(args):
    """Times stoke_loader as best_peers.run_peer times a peer; prints figure/config lines."""
    import numpy  # noqa: F401  one-time imports, outside the timing
    import stoke_loader

    peer = StokePython()
    configs = [c for c in peer.configs if peer.available(c)]
    for config in configs:
        print(f"config {STOKE}/{config}: {peer.configs[config]}", flush=True)
    print(f"version stoke_loader {stoke_loader.__version__}", flush=True)
    small_items = min(best_peers.SMALL_ITEMS,
                      (args.small_batches + 2) * best_peers.SMALL_BATCH)
    image_records = min(best_peers.IMAGE_RECORDS,
                        (args.image_batches + 2) * best_peers.IMAGE_BATCH)
    for config in (c for c in peer.small_configs if c in configs):
        def measure():
            seconds, samples = best_peers.steady(peer.build("small", config, small_items),
                                                 args.small_batches)
            return seconds / samples * 1e9
        print(f"figure overhead_ns_per_item/{STOKE}/{config}: "
              f"{best_peers.repeated(measure, args.repeats):.1f}", flush=True)
    for config in (c for c in peer.image_configs if c in configs):
        def measure():
            seconds, samples = best_peers.steady(peer.build("image", config, image_records),
                                                 args.image_batches)
            return samples / seconds
        print(f"figure image_samples_per_s/{STOKE}/{config}: "
              f"{best_peers.repeated(measure, args.repeats):.1f}", flush=True)
    # First batches: more runs than the steady figures (they are short), as loader_bench does.
    runs = max(args.repeats, 3) * 3
    for config in (c for c in peer.first_batch_configs if c in configs):
        new = best_peers.repeated(
            lambda: best_peers.first_batch(peer, "image", config, 4 * best_peers.IMAGE_BATCH),
            runs)
        print(f"figure first_batch_s/{STOKE}/{config}/new: {new:.6f}", flush=True)
    new = best_peers.repeated(
        lambda: best_peers.first_batch(peer, "small", "w2", 4 * best_peers.SMALL_BATCH), runs)
    print(f"figure first_batch_s/{STOKE}/w2/new_small: {new:.6f}", flush=True)


# ------------------------------------------------------------------------------------------
# The JPEG workload: stoke_loader.image_folder as one more configuration of image_peers.py
# ------------------------------------------------------------------------------------------


def jpeg_available():
    try:
        import stoke_loader as sl
    except ImportError:
        return False
    return hasattr(sl, "image_folder")


def stoke_jpeg_config():
    """image_peers.py's configuration tuple for stoke_loader over the image folder."""

    def build(args):
        import image_peers
        import numpy as np
        import stoke_loader as sl

        # As image_bench's "stoke, image folder": random resized crop, flip, normalise, the
        # region decode, not the reduced-size one (image_peers.py's MEAN and STD).
        source = sl.image_folder(args.folder, args.crop, crop="random", flip=0.5,
                                 normalize=(image_peers.MEAN, image_peers.STD),
                                 reduced_decode=False, region_decode=True)
        loader = sl.Loader(source, batch_size=args.batch, shuffle=True, seed=11,
                           num_workers=args.workers)

        def epoch(_):
            for batch in loader:
                yield np.from_dlpack(batch["image"]), np.from_dlpack(batch["label"])
        return epoch

    return ("stoke-python-folder", "stoke_loader",
            "sl.image_folder(crop='random', flip=0.5, normalize=...): stoke's decode, crop, "
            "resize, flip, normalise, {w} worker threads",
            build)


def run_jpeg_child(args):
    import image_peers
    config = stoke_jpeg_config()
    image_peers.PEER_SETUP.setdefault("stoke_loader", ["stoke_loader", "numpy"])
    ns = argparse.Namespace(folder=args.jpeg_folder, batch=256, crop=56, workers=2,
                            epochs=args.jpeg_epochs)
    try:
        result = image_peers.measure(config, ns)
    except BaseException as error:  # noqa: BLE001 -- any failure is the line's error
        result = {"peer": config[1], "config": config[0],
                  "error": f"{type(error).__name__}: {error}"[:600]}
    print(json.dumps(result), flush=True)


# ------------------------------------------------------------------------------------------
# The parent: runs everything, then reports
# ------------------------------------------------------------------------------------------


def child_output(command, timeout, what):
    """stdout of `command` (stderr's last line reported when it fails)."""
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", PYTHONWARNINGS="ignore")
    try:
        child = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True, timeout=timeout, env=env)
    except subprocess.TimeoutExpired as e:
        out = e.stdout.decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
        print(f"# {what}: timed out after {timeout:.0f} s", file=sys.stderr)
        return out
    if child.returncode != 0:
        tail = (child.stderr.strip().splitlines() or ["no output"])[-1]
        print(f"# {what}: exit status {child.returncode}: {tail}", file=sys.stderr)
    return child.stdout


def run_cpp(args, json_path):
    """loader_bench on the workloads compared here (Google Benchmark medians)."""
    pattern = ("^(overhead/workers:(-1|1|2)/|image/workers:[012]/devices:1/|"
               "first_batch_new_loader/workers:2/shared_pool:0|first_batch_new_loader_small/)")
    command = [args.loader_bench, f"--benchmark_filter={pattern}",
               f"--benchmark_repetitions={args.cpp_repetitions}",
               "--benchmark_report_aggregates_only=true", f"--benchmark_out={json_path}",
               "--benchmark_out_format=json"]
    if args.quick:
        command.append("--benchmark_min_time=0.05")
    child_output(command, args.timeout, "loader_bench")
    times = report.medians(json_path)
    median_s = report.medians(json_path, "median_s")
    fig = {}
    small = best_peers.SMALL_ITEMS
    for workers, key in ((-1, "w0"), (1, "w1"), (2, "w2")):
        seconds = times.get(f"overhead/workers:{workers}/real_time")
        if seconds:
            fig[f"overhead_ns_per_item/cpp/{key}"] = seconds / small * 1e9
    for workers in (0, 1, 2):
        seconds = times.get(f"image/workers:{workers}/devices:1/real_time")
        if seconds:
            fig[f"image_samples_per_s/cpp/w{workers}"] = report.IMAGE_SAMPLES / seconds
    value = median_s.get("first_batch_new_loader/workers:2/shared_pool:0/manual_time")
    if value:
        fig["first_batch_s/cpp/w2/new"] = value
    value = median_s.get("first_batch_new_loader_small/workers:2/manual_time")
    if value:
        fig["first_batch_s/cpp/w2/new_small"] = value
    return fig


def run_jpeg(args, lines):
    """stoke from C++ (image_bench), stoke_loader and the peers' best on the JPEG folder."""
    fig = {}
    json_path = os.path.join(args.work, "image_bench.json")
    command = [args.image_bench, "--dir", args.jpeg_dir, "--json", json_path,
               "--repetitions", str(args.repeats)]
    out = child_output(command, args.timeout, "image_bench")
    for line in out.splitlines():
        match = re.match(r"(stoke, image folder, 2 threads)\s+(\d+(?:\.\d+)?) images/s", line)
        if match:
            fig["jpeg_images_per_s/cpp/folder"] = float(match.group(2))
        match = re.match(r"(stoke, image folder, 2 threads).*first batch (\d+(?:\.\d+)?) ms", line)
        if match:
            fig["jpeg_first_batch_s/cpp/folder"] = float(match.group(2)) / 1e3
    folder = os.path.join(args.jpeg_dir, "folder")
    results = []
    for _ in range(args.repeats):  # stoke_loader, one child each (as each peer config runs)
        out = child_output([sys.executable, os.path.abspath(__file__), "--jpeg-child",
                            "--jpeg-folder", folder, "--jpeg-epochs", str(args.jpeg_epochs),
                            "--images", args.images], args.timeout, "stoke_loader jpeg")
        results += [json.loads(x) for x in out.splitlines() if x.startswith("{")]
    ok = [r for r in results if "error" not in r]
    if ok:
        fig["jpeg_images_per_s/stoke_python/folder"] = statistics.median(
            r["images_per_second"] for r in ok)
        fig["jpeg_first_batch_s/stoke_python/folder"] = statistics.median(
            r["first_batch_seconds"] for r in ok)
    elif results:
        lines.append(f"skip stoke_loader jpeg: {results[-1]['error']}")
    command = [sys.executable, os.path.join(ROOT, "bench", "peers", "image_peers.py"),
               "--folder", folder, "--batch", "256", "--crop", "56", "--workers", "2",
               "--epochs", str(args.jpeg_epochs), "--only", *JPEG_PEER_CONFIGS]
    out = child_output(command, args.timeout * 4, "image_peers.py")
    for line in out.splitlines():
        if not line.startswith("{"):
            continue
        r = json.loads(line)
        if "error" in r:
            lines.append(f"skip jpeg {r['config']}: {r['error']}")
            continue
        key = f"{r['peer']}: {r['config']}"
        fig[f"jpeg_images_per_s/peer/{key}"] = r["images_per_second"]
        fig[f"jpeg_first_batch_s/peer/{key}"] = r["first_batch_seconds"]
    return fig


def versions():
    found = []
    for module in ("numpy", "torch", "torchdata", "grain", "tensorflow", "nvidia.dali", "spdl"):
        out = subprocess.run([sys.executable, "-c",
                              f"import importlib.metadata as m, {module} as x; "
                              f"print(getattr(x, '__version__', '') or '?')"],
                             capture_output=True, text=True,
                             env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"))
        if out.returncode == 0:
            found.append(f"{module} {out.stdout.strip().splitlines()[-1]}")
    return found


def best(fig, prefix, higher, exclude=()):
    """(value, configuration) of the best figure whose name starts with prefix."""
    found = [(v, k[len(prefix):]) for k, v in fig.items()
             if k.startswith(prefix) and not any(k[len(prefix):].startswith(e) for e in exclude)]
    if not found:
        return None, None
    return (max if higher else min)(found)


def fmt(value, digits):
    if value is None:
        return "-"
    return f"{value:,.{digits}f}"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--images", required=True, help="the records file loader_bench made")
    parser.add_argument("--loader-bench", help="build/default/bench/loader_bench")
    parser.add_argument("--image-bench", help="build/default/bench/image_bench")
    parser.add_argument("--jpeg-dir", help="image_bench's --dir (the JPEG folder and shards)")
    parser.add_argument("--peers", nargs="*", default=list(PEER_NAMES),
                        help="best_peers.py peers to run (default: all)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--cpp-repetitions", type=int, default=5)
    # Shorter than best_peers.py's own defaults (5000, 300), so that the whole run, the peers'
    # worker start-ups included, stays near 5 minutes on 2 cores.
    parser.add_argument("--small-batches", type=int, default=3000, help="batches of 64 timed")
    parser.add_argument("--image-batches", type=int, default=200, help="batches of 256 timed")
    parser.add_argument("--jpeg-epochs", type=int, default=2)
    parser.add_argument("--quick", action="store_true",
                        help="a short run for development: fewer batches and repetitions")
    parser.add_argument("--timeout", type=float, default=300, help="seconds per child")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--jpeg-child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--jpeg-folder", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.quick:
        args.repeats, args.cpp_repetitions = 1, 1
        args.small_batches, args.image_batches, args.jpeg_epochs = 500, 40, 1
    best_peers.IMAGES_PATH = os.path.abspath(args.images)
    os.environ["STOKE_BENCH_IMAGES"] = best_peers.IMAGES_PATH
    if args.child:
        return run_stoke(args)
    if args.jpeg_child:
        return run_jpeg_child(args)
    if not args.loader_bench:
        parser.error("--loader-bench is required")

    fig, configs, skipped, notes = {}, {}, {}, []
    with tempfile.TemporaryDirectory() as work:
        args.work = work
        started = time.time()
        fig.update(run_cpp(args, os.path.join(work, "loader_bench.json")))
        forwarded = ["--images", best_peers.IMAGES_PATH, "--repeats", str(args.repeats),
                     "--small-batches", str(args.small_batches),
                     "--image-batches", str(args.image_batches)]
        out_path = os.path.join(work, "peers.txt")
        with open(out_path, "w") as out:
            out.write(child_output([sys.executable, os.path.abspath(__file__), "--child",
                                    *forwarded], args.timeout, "stoke_loader"))
            if args.peers:
                out.write(child_output(
                    [sys.executable, os.path.join(ROOT, "bench", "peers", "best_peers.py"),
                     *forwarded, "--only", *args.peers, "--timeout", str(args.timeout)],
                    args.timeout * (len(args.peers) + 1), "best_peers.py"))
        fig.update(report.figures(out_path))
        configs, skipped = report.peer_notes(out_path)
        stoke_version = next((line.split()[-1] for line in open(out_path)
                              if line.startswith("version stoke_loader")), "?")
        jpeg = None
        if args.image_bench and args.jpeg_dir and jpeg_available():
            jpeg = run_jpeg(args, notes)
            fig.update(jpeg)
        elapsed = time.time() - started
    print_report(fig, configs, skipped, notes, jpeg, stoke_version, elapsed, args)
    return 0


def print_report(fig, configs, skipped, notes, jpeg, stoke_version, elapsed, args):
    import platform
    p = f"/{STOKE}/"
    peers_ran = [name for name in PEER_NAMES if name in args.peers]
    print(f"# python {platform.python_version()}, stoke_loader {stoke_version}; "
          + ", ".join(versions()))
    print(f"# {len(peers_ran)} peers asked for; figures are medians of {args.repeats} runs "
          f"(C++: of {args.cpp_repetitions} repetitions); the run took {elapsed:.0f} s"
          + ("; --quick: a development run, not a measurement" if args.quick else ""))
    for name, reason in skipped.items():
        print(f"# skipped {name}: {reason}")
    for note in notes:
        print(f"# {note}")
    if jpeg:
        print("# JPEG first batch: stoke_loader's and the peers' are timed from constructing the "
              "source (listing the folder included), as image_peers.py times them; image_bench's "
              "C++ figure from building the loader over a folder already listed")
    print()

    def best_peer(prefix, higher):
        found = [(v, k[len(prefix):]) for k, v in fig.items()
                 if k.startswith(prefix) and k[len(prefix):].split("/")[0] in PEER_NAMES]
        if not found:
            return None, None
        return (max if higher else min)(found)

    rows, ratios = [], []

    def row(label, ours, cpp, peer, digits, higher, ratio_name, scale=1.0):
        """A row of the table and its ratios (above 1 favours stoke_loader)."""
        py = fig.get(ours)
        c = fig.get(cpp) if cpp else None
        pv, pconf = peer if peer else (None, None)
        vs_cpp = vs_peer = None
        if py and c:
            vs_cpp = py / c if higher else c / py
            ratios.append((f"python_{ratio_name}_vs_cpp", vs_cpp, f">= {TARGET_VS_CPP}"))
        if py and pv:
            vs_peer = py / pv if higher else pv / py
            ratios.append((f"python_{ratio_name}_vs_best_peer", vs_peer, f">= {TARGET_VS_PEER}"))
        s = (lambda v: None if v is None else v * scale)
        rows.append(f"| Python: {label} | {fmt(s(py), digits)} | {fmt(s(c), digits)} | "
                    f"{fmt(vs_cpp, 2)} | {fmt(s(pv), digits)} | "
                    f"{pconf.replace('/', ', ') if pconf else '-'} | {fmt(vs_peer, 2)} |")

    for key, label in (("w0", "caller thread / num_workers 0"), ("w2", "2 workers")):
        peer = best_peer("overhead_ns_per_item/", higher=False)
        row(f"overhead, ns per item, {label}", f"overhead_ns_per_item{p}{key}",
            f"overhead_ns_per_item/cpp/{key}", peer if key == "w0" else None, 1, False,
            f"overhead_{key}")
    peer = best_peer("image_samples_per_s/", higher=True)
    row("image records, samples/s, caller thread, normalised float32",
        f"image_samples_per_s{p}w0", "image_samples_per_s/cpp/w0", None, 0, True, "image_w0")
    row("image records, samples/s, 2 workers, normalised float32",
        f"image_samples_per_s{p}w2", "image_samples_per_s/cpp/w2", peer, 0, True, "image_w2")
    best_image = best(fig, "image_samples_per_s" + p, True, exclude=("w2_u8",))
    if best_image[0]:
        fig["image_samples_per_s/stoke_python_best"] = best_image[0]
        row(f"image records, samples/s, best normalised ({best_image[1]})",
            "image_samples_per_s/stoke_python_best", None, peer, 0, True, "image_best")
    row("image records, samples/s, 2 workers, uint8 as the loader gives them",
        f"image_samples_per_s{p}w2_u8", None, None, 0, True, "image_u8")
    new_peers = {k: v for k, v in fig.items() if k.startswith("first_batch_s/")
                 and k.endswith("/new") and k.split("/")[1] in PEER_NAMES}
    small_peers = {k: v for k, v in fig.items() if k.startswith("first_batch_s/")
                   and k.endswith("/new_small") and k.split("/")[1] in PEER_NAMES}
    peer = min(((v, "/".join(k.split("/")[1:3])) for k, v in new_peers.items()), default=None)
    row("first batch of a new loader, 2 workers, ms", f"first_batch_s{p}w2/new",
        "first_batch_s/cpp/w2/new", peer, 3, False, "first_batch", scale=1e3)
    peer = min(((v, "/".join(k.split("/")[1:3])) for k, v in small_peers.items()), default=None)
    row("first batch of a new loader, small items, 2 workers, ms",
        f"first_batch_s{p}w2/new_small", "first_batch_s/cpp/w2/new_small", peer, 3, False,
        "first_batch_small", scale=1e3)
    if jpeg:
        peers = {k.split("/", 2)[2]: v for k, v in fig.items()
                 if k.startswith("jpeg_images_per_s/peer/")}
        peer = max(((v, k) for k, v in peers.items()), default=None)
        row("JPEG folder, images/s, 2 threads", "jpeg_images_per_s/stoke_python/folder",
            "jpeg_images_per_s/cpp/folder", peer, 0, True, "jpeg")
        peers = {k.split("/", 2)[2]: v for k, v in fig.items()
                 if k.startswith("jpeg_first_batch_s/peer/")}
        peer = min(((v, k) for k, v in peers.items()), default=None)
        row("JPEG folder, first batch, ms", "jpeg_first_batch_s/stoke_python/folder",
            "jpeg_first_batch_s/cpp/folder", peer, 1, False, "jpeg_first_batch", scale=1e3)

    print("## Figures")
    print()
    print("| workload | stoke_loader | stoke from C++ | Python over C++ | best Python peer | "
          "its configuration | stoke_loader over best peer |")
    print("| --- | ---: | ---: | ---: | ---: | --- | ---: |")
    print("\n".join(rows))
    print()
    print("Python over C++ is the C++ loader's time over stoke_loader's (or stoke_loader's "
          "rate over the C++ loader's); over best peer likewise: above 1 favours "
          "stoke_loader. The best peer is the best configuration of all the peers that ran.")
    print()
    print("## Ratios")
    print()
    print("| ratio | value | target | |")
    print("| --- | ---: | --- | --- |")
    for name, value, target in ratios:
        met = "met" if value >= float(target.split()[-1]) else "missed"
        print(f"| `{name}` | {value:.3f} | {target} | {met} |")
    print()
    print("## Configurations")
    print()
    print("| loader / configuration | what it runs | overhead, ns per item | image, samples/s "
          "| first batch, ms | first batch, small items, ms |")
    print("| --- | --- | ---: | ---: | ---: | ---: |")
    names = [f"cpp/w{w}" for w in (0, 1, 2)]
    cpp_text = {"cpp/w0": "stoke from C++ (loader_bench): the caller's thread",
                "cpp/w1": "stoke from C++: 1 worker", "cpp/w2": "stoke from C++: 2 workers"}
    names += [f"{STOKE}/{c}" for c in StokePython.configs if f"{STOKE}/{c}" in configs]
    names += [k for k in configs if not k.startswith(STOKE)]
    for name in names:
        text = cpp_text.get(name, configs.get(name, ""))
        cells = [fmt(fig.get(f"overhead_ns_per_item/{name}"), 1),
                 fmt(fig.get(f"image_samples_per_s/{name}"), 0),
                 fmt(_ms(fig.get(f"first_batch_s/{name}/new")), 3),
                 fmt(_ms(fig.get(f"first_batch_s/{name}/new_small")), 3)]
        if name == "cpp/w2":
            cells[2] = fmt(_ms(fig.get("first_batch_s/cpp/w2/new")), 3)
            cells[3] = fmt(_ms(fig.get("first_batch_s/cpp/w2/new_small")), 3)
        print(f"| {name} | {text} | {' | '.join(cells)} |")
    if jpeg:
        print()
        print("## JPEG configurations")
        print()
        print("| loader: configuration | images/s | first batch, ms |")
        print("| --- | ---: | ---: |")
        for key, label in (("cpp/folder", "stoke from C++ (image_bench): image folder, 2 threads"),
                           ("stoke_python/folder", "stoke_loader: sl.image_folder, 2 workers")):
            print(f"| {label} | {fmt(fig.get(f'jpeg_images_per_s/{key}'), 0)} | "
                  f"{fmt(_ms(fig.get(f'jpeg_first_batch_s/{key}')), 1)} |")
        for k, v in fig.items():
            if k.startswith("jpeg_images_per_s/peer/"):
                name = k.split("/", 2)[2]
                print(f"| {name} | {fmt(v, 0)} | "
                      f"{fmt(_ms(fig.get('jpeg_first_batch_s/peer/' + name)), 1)} |")
    print()
    for name, value, _ in ratios:
        print(f"ratio {name}: {value:.3f}")


def _ms(seconds):
    return None if seconds is None else seconds * 1e3


if __name__ == "__main__":
    sys.exit(main())

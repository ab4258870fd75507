"""Turns the loader figures of one `./scripts/bench` run into ratios, bench/RESULTS.md and a
plot of throughput against workers.

Inputs, in --results: loader_bench.json (Google Benchmark, median aggregates), loader_memory.txt
(`loader_bench --peak-memory`) and, after `--peers`, peers.txt (`figure <name>: <value>`,
`config <peer>/<config>: <text>` and `skip <peer>: <reason>` lines of bench/peers/). Prints
`ratio <name>: <x>` lines for the peer comparisons (loader_bench's own ratios come from
scripts/bench).
"""

import argparse
import datetime
import json
import os
import platform
import re
import subprocess
import sys

SCALE = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}
SMALL_ITEMS, SMALL_BATCH = 1_000_000, 64
IMAGE_SAMPLES = 390 * 256  # an epoch of 100,000 records in batches of 256, last one dropped


def medians(path, counter=None):
    """Median over repetitions of each benchmark's time in seconds (or of its `counter`)."""
    if not os.path.exists(path):
        return {}
    out = {}
    for run in json.load(open(path))["benchmarks"]:
        if run.get("aggregate_name", "median") != "median":
            continue
        if counter is None:
            out[run["run_name"]] = run["real_time"] * SCALE[run["time_unit"]]
        elif counter in run:
            out[run["run_name"]] = run[counter]
    return out


def figures(path):
    out = {}
    if os.path.exists(path):
        for line in open(path):
            match = re.match(r"figure (\S+): (\S+)", line)
            if match:
                out[match.group(1)] = float(match.group(2))
    return out


def peer_notes(path):
    """The `config <peer>/<config>: <text>` and `skip <peer>: <reason>` lines of bench/peers/."""
    configs, skipped = {}, {}
    if os.path.exists(path):
        for line in open(path):
            match = re.match(r"config (\S+): (.*)", line)
            if match:
                configs[match.group(1)] = match.group(2).strip()
            match = re.match(r"skip (\S+): (.*)", line)
            if match:
                skipped[match.group(1)] = match.group(2).strip()
    return configs, skipped


# The other loaders, as bench/peers/ names them in its figures, and as the tables name them.
PEERS = [
    ("pytorch", "PyTorch DataLoader (per item)"),
    ("pytorch_batched", "PyTorch DataLoader (batched fetch)"),
    ("libtorch", "libtorch torch::data"),
    ("torchdata", "torchdata.nodes"),
    ("grain", "Grain"),
    ("tfdata", "tf.data"),
    ("dali", "NVIDIA DALI (CPU)"),
    ("spdl", "SPDL"),
]
# (workload label, figure prefix, suffix, True where higher is better, scale, digits, unit).
BEST_WORKLOADS = [
    ("overhead, ns per item", "overhead_ns_per_item", "", False, 1.0, 1),
    ("image, samples/s", "image_samples_per_s", "", True, 1.0, 0),
    ("first batch of a new loader, ms", "first_batch_s", "/new", False, 1e3, 2),
    ("first batch of a new loader, small items, ms", "first_batch_s", "/new_small", False, 1e3, 3),
]
# stoke's configurations that compete on each workload (one consumer: the peers have one).
STOKE_CONFIGS = {
    "overhead_ns_per_item": {"w0": "caller thread", "w1": "1 worker", "w2": "2 workers"},
    "image_samples_per_s": {"w0/d1": "caller thread", "w1/d1": "1 worker",
                            "w2/d1": "2 workers"},
    "first_batch_s/new": {"w2/new": "2 workers, own pool",
                          "w2/new_shared_pool": "2 workers, shared pool"},
    "first_batch_s/new_small": {"w2/new_small": "2 workers"},
}


def best_of(fig, prefix, suffix, peer, higher):
    """(value, configuration) of `peer`'s best figure `prefix/peer/<config><suffix>`, or None."""
    found = []
    for key, value in fig.items():
        head = f"{prefix}/{peer}/"
        if key.startswith(head) and key.endswith(suffix) and value > 0:
            config = key[len(head):len(key) - len(suffix)] if suffix else key[len(head):]
            if config and (suffix or "/" not in config or peer == "stoke"):
                found.append((value, config))
    if not found:
        return None
    return max(found) if higher else min(found)


def stoke_best(fig, prefix, suffix, higher):
    configs = STOKE_CONFIGS[prefix + suffix if prefix == "first_batch_s" else prefix]
    found = [(fig[f"{prefix}/stoke/{c}"], label) for c, label in configs.items()
             if f"{prefix}/stoke/{c}" in fig]
    if not found:
        return None
    return max(found) if higher else min(found)


def peers_at_best(fig):
    """Rows (label, peer value, peer config, stoke value, stoke config, lead) per peer and
    workload, and then the best peer of each workload; and {prefix+suffix: best peer's
    (value, peer label, config)}."""
    rows, best = [], {}
    for workload, prefix, suffix, higher, _, _ in BEST_WORKLOADS:
        ours = stoke_best(fig, prefix, suffix, higher)
        for peer, label in PEERS:
            theirs = best_of(fig, prefix, suffix, peer, higher)
            if theirs is None:
                continue
            lead = None
            if ours is not None:
                lead = ours[0] / theirs[0] if higher else theirs[0] / ours[0]
            rows.append((f"{label}, {workload}", theirs[0], theirs[1], ours, lead, prefix, suffix))
            current = best.get(prefix + suffix)
            if current is None or (theirs[0] > current[0] if higher else theirs[0] < current[0]):
                best[prefix + suffix] = (theirs[0], label, theirs[1])
        if prefix + suffix in best:
            value, label, config = best[prefix + suffix]
            lead = None
            if ours is not None:
                lead = ours[0] / value if higher else value / ours[0]
            rows.append((f"best peer, {workload}", value, f"{label}, {config}", ours, lead,
                         prefix, suffix))
    return rows, best


def machine():
    cores = os.cpu_count()
    mem = "?"
    for line in open("/proc/meminfo"):
        if line.startswith("MemTotal:"):
            mem = f"{int(line.split()[1]) / 2**20:.1f} GiB"
    model = "?"
    for line in open("/proc/cpuinfo"):
        if line.startswith("model name"):
            model = line.split(":", 1)[1].strip()
            break
    try:
        compiler = subprocess.run(["clang++-19", "--version"], capture_output=True,
                                  text=True).stdout.splitlines()[0]
    except (OSError, IndexError):
        compiler = "?"
    return cores, mem, model, compiler


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--results", required=True)
    parser.add_argument("--command", required=True)
    parser.add_argument("--load", nargs=2, required=True)
    parser.add_argument("--markdown", required=True)
    parser.add_argument("--plot", required=True)
    args = parser.parse_args()
    stoke = medians(os.path.join(args.results, "loader_bench.json"))
    peers = figures(os.path.join(args.results, "peers.txt"))
    memory = figures(os.path.join(args.results, "loader_memory.txt"))
    needed = ["overhead/workers:-1/real_time", "image/workers:2/devices:2/real_time",
              "stream_copy/real_time", "first_batch_later_epoch/workers:2/manual_time"]
    if any(name not in stoke for name in needed):
        sys.exit("report: loader_bench did not run all its benchmarks (filtered?): "
                 "bench/RESULTS.md is left as it was")

    # stoke's figures in the units the peers print.
    fig = {}
    for w, name in ((0, "overhead/workers:-1/real_time"), (1, "overhead/workers:1/real_time"),
                    (2, "overhead/workers:2/real_time")):
        fig[f"overhead_ns_per_item/stoke/w{w}"] = stoke[name] / SMALL_ITEMS * 1e9
        fig[f"overhead_ns_per_batch/stoke/w{w}"] = stoke[name] / (SMALL_ITEMS / SMALL_BATCH) * 1e9
    for d in (1, 2):
        for w in (0, 1, 2):
            fig[f"image_samples_per_s/stoke/w{w}/d{d}"] = (
                IMAGE_SAMPLES / stoke[f"image/workers:{w}/devices:{d}/real_time"])
    fig["image_samples_per_s/stream_copy"] = IMAGE_SAMPLES / stoke["stream_copy/real_time"]
    for shuffled, key in ((0, "stream_copy_2threads"), (1, "shuffled_copy_2threads")):
        name = f"stream_copy_threads/threads:2/shuffled:{shuffled}/real_time"
        if name in stoke:
            fig[f"image_samples_per_s/{key}"] = IMAGE_SAMPLES / stoke[name]
    # First batches: the median of single runs, the statistic the peers print; the mean (which
    # also holds the rare slow run) is kept beside it.
    first = medians(os.path.join(args.results, "loader_bench.json"), "median_s")
    for key, name in (("new", "first_batch_new_loader/workers:2/shared_pool:0/manual_time"),
                      ("new_small", "first_batch_new_loader_small/workers:2/manual_time"),
                      ("later", "first_batch_later_epoch/workers:2/manual_time"),
                      ("new_shared_pool",
                       "first_batch_new_loader/workers:2/shared_pool:1/manual_time")):
        fig[f"first_batch_s/stoke/w2/{key}"] = first.get(name, stoke[name])
        fig[f"first_batch_mean_s/stoke/w2/{key}"] = stoke[name]
    for key, name in (("t1", "first_batch_copy/threads:1/warm:0/manual_time"),
                      ("t2", "first_batch_copy/threads:2/warm:0/manual_time"),
                      ("t2_warm", "first_batch_copy/threads:2/warm:1/manual_time")):
        if name in stoke:
            fig[f"first_batch_s/copy/{key}"] = first.get(name, stoke[name])
    fig.update(peers)
    best_rows, best = peers_at_best(fig)
    for prefix, suffix, higher in (("image_samples_per_s", "", True),
                                   ("overhead_ns_per_item", "", False),
                                   ("first_batch_s", "/new", False),
                                   ("first_batch_s", "/new_small", False)):
        ours = stoke_best(fig, prefix, suffix, higher)
        if ours is not None:
            fig[f"{prefix}/stoke_best{suffix}"] = ours[0]
        if prefix + suffix in best:
            fig[f"{prefix}/best_peer{suffix}"] = best[prefix + suffix][0]

    # (name, numerator key, denominator key, target text, met(x)); a ratio > 1 favours stoke.
    specs = [
        ("overhead_vs_pytorch_w0", "overhead_ns_per_item/pytorch/w0", "overhead_ns_per_item/stoke/w0",
         ">= 50", lambda x: x >= 50),
        ("overhead_vs_pytorch_w2", "overhead_ns_per_item/pytorch/w2", "overhead_ns_per_item/stoke/w2",
         ">= 50", lambda x: x >= 50),
        ("overhead_vs_libtorch_w0", "overhead_ns_per_item/libtorch/w0",
         "overhead_ns_per_item/stoke/w0", "> 1", lambda x: x > 1),
        ("overhead_vs_libtorch_w2", "overhead_ns_per_item/libtorch/w2",
         "overhead_ns_per_item/stoke/w2", "> 1", lambda x: x > 1),
        ("image_vs_pytorch_w2", "image_samples_per_s/stoke/w2/d1", "image_samples_per_s/pytorch/w2",
         ">= 10", lambda x: x >= 10),
        ("image_vs_pytorch_w0", "image_samples_per_s/stoke/w0/d1", "image_samples_per_s/pytorch/w0",
         "", None),
        ("image_vs_libtorch_w2", "image_samples_per_s/stoke/w2/d1",
         "image_samples_per_s/libtorch/w2", "> 1", lambda x: x > 1),
        ("image_vs_libtorch_w0", "image_samples_per_s/stoke/w0/d1",
         "image_samples_per_s/libtorch/w0", "> 1", lambda x: x > 1),
        ("image_w2_vs_stream_copy", "image_samples_per_s/stoke/w2/d1",
         "image_samples_per_s/stream_copy", ">= 0.6", lambda x: x >= 0.6),
        ("image_w0_vs_stream_copy", "image_samples_per_s/stoke/w0/d1",
         "image_samples_per_s/stream_copy", "", None),
        ("first_batch_vs_pytorch_w2", "first_batch_s/pytorch/w2/new", "first_batch_s/stoke/w2/new",
         ">= 100", lambda x: x >= 100),
        ("first_batch_small_vs_pytorch_w2", "first_batch_s/pytorch/w2/new_small",
         "first_batch_s/stoke/w2/new_small", ">= 100", lambda x: x >= 100),
        ("first_batch_later_epoch_vs_pytorch_w2", "first_batch_s/pytorch/w2/later",
         "first_batch_s/stoke/w2/later", "", None),
        ("first_batch_later_epoch_vs_pytorch_persistent_w2", "first_batch_s/pytorch/w2/persistent",
         "first_batch_s/stoke/w2/later", "", None),
        ("first_batch_vs_libtorch_w2", "first_batch_s/libtorch/w2/new", "first_batch_s/stoke/w2/new",
         "", None),
        ("first_batch_shared_pool_vs_pytorch_w2", "first_batch_s/pytorch/w2/new",
         "first_batch_s/stoke/w2/new_shared_pool", ">= 100", lambda x: x >= 100),
        # Against each peer's best configuration (bench/peers/best_peers.py), stoke's best with
        # one consumer; and against the plain copy on 1 and 2 threads.
        ("image_vs_best_peer", "image_samples_per_s/stoke_best", "image_samples_per_s/best_peer",
         "> 1", lambda x: x > 1),
        ("overhead_vs_best_peer", "overhead_ns_per_item/best_peer",
         "overhead_ns_per_item/stoke_best", "> 1", lambda x: x > 1),
        ("first_batch_vs_best_peer", "first_batch_s/best_peer/new", "first_batch_s/stoke_best/new",
         "> 1", lambda x: x > 1),
        ("first_batch_small_vs_best_peer", "first_batch_s/best_peer/new_small",
         "first_batch_s/stoke_best/new_small", "> 1", lambda x: x > 1),
        ("image_best_vs_stream_copy", "image_samples_per_s/stoke_best",
         "image_samples_per_s/stream_copy", "", None),
        ("image_best_vs_stream_copy_2threads", "image_samples_per_s/stoke_best",
         "image_samples_per_s/stream_copy_2threads", ">= 0.95", lambda x: x >= 0.95),
        ("image_best_vs_shuffled_copy_2threads", "image_samples_per_s/stoke_best",
         "image_samples_per_s/shuffled_copy_2threads", "", None),
        ("first_batch_vs_copy_2threads", "first_batch_s/copy/t2", "first_batch_s/stoke/w2/new",
         ">= 0.833 (within 1.2x)", lambda x: x >= 1 / 1.2),
        ("first_batch_shared_pool_vs_copy_2threads", "first_batch_s/copy/t2_warm",
         "first_batch_s/stoke/w2/new_shared_pool", ">= 0.833 (within 1.2x)",
         lambda x: x >= 1 / 1.2),
    ]
    rows = []
    for name, num, den, target, met in specs:
        if num in fig and den in fig and fig[den] > 0:
            x = fig[num] / fig[den]
            print(f"ratio {name}: {x:.3f}")
            rows.append((name, x, target, "" if met is None else ("met" if met(x) else "missed")))
    if "peak_anon_growth_mib" in memory:
        x = memory["peak_anon_growth_mib"] / (memory["peak_bound_mib"] + 64)
        rows.append(("image_peak_rss_over_bound_plus_64MiB", x, "<= 1", "met" if x <= 1 else "missed"))

    configs, skipped = peer_notes(os.path.join(args.results, "peers.txt"))
    write_plot(fig, best, args.plot)
    write_markdown(fig, rows, memory, args, best_rows, configs, skipped)


def write_plot(fig, best, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    plt.figure(figsize=(6.4, 4.2))
    for label, prefix, workers in (
        ("stoke, 1 device", "image_samples_per_s/stoke/w{}/d1", (0, 1, 2)),
        ("stoke, 2 devices (split)", "image_samples_per_s/stoke/w{}/d2", (0, 1, 2)),
        ("PyTorch DataLoader", "image_samples_per_s/pytorch/w{}", (0, 2)),
        ("libtorch torch::data", "image_samples_per_s/libtorch/w{}", (0, 2)),
    ):
        xs = [w for w in workers if prefix.format(w) in fig]
        if xs:
            plt.plot(xs, [fig[prefix.format(w)] for w in xs], marker="o", label=label)
    if "image_samples_per_s/stream_copy" in fig:
        plt.axhline(fig["image_samples_per_s/stream_copy"], color="grey", linestyle="--",
                    label="plain streaming copy, 1 thread")
    if "image_samples_per_s/stream_copy_2threads" in fig:
        plt.axhline(fig["image_samples_per_s/stream_copy_2threads"], color="black",
                    linestyle=":", label="plain streaming copy, 2 threads")
    if "image_samples_per_s" in best:
        value, label, config = best["image_samples_per_s"]
        plt.axhline(value, color="tab:purple", linestyle="-.",
                    label=f"best other loader ({label}, {config})")
    plt.xticks([0, 1, 2], ["0 (caller)", "1", "2"])
    plt.xlabel("worker threads (per device)")
    plt.ylabel("samples/s (3x64x64 uint8 -> float32)")
    plt.yscale("log")
    plt.title("Image-like workload, batch 256, shuffled")
    plt.legend(fontsize=8)
    plt.grid(True, which="both", alpha=0.3)
    plt.tight_layout()
    plt.savefig(path, dpi=110)


def fmt(fig, key, scale=1.0, digits=0):
    return f"{fig[key] * scale:,.{digits}f}" if key in fig else "not run"


def write_markdown(fig, rows, memory, args, best_rows, configs, skipped):
    cores, mem, model, compiler = machine()
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    out = [
        "# Loader benchmark results",
        "",
        f"Written by `{args.command}` on {now}. Do not edit: rerun the command.",
        "",
        f"Machine: {cores} cores ({model}), {mem} memory, {platform.system()} "
        f"{platform.release()}; compiler {compiler} (preset `default`, RelWithDebInfo). "
        f"Load average (1, 5, 15 min) {' '.join(args.load[0].split())} at the start, "
        f"{' '.join(args.load[1].split())} at the end: the machine was shared, so figures are "
        "medians of repeated runs and move between runs.",
        "",
        "## Figures",
        "",
        "| workload | stoke | PyTorch DataLoader | libtorch torch::data |",
        "| --- | ---: | ---: | ---: |",
    ]
    for w, label in ((0, "caller thread / num_workers 0"), (1, "1 worker"), (2, "2 workers")):
        out.append(f"| overhead, ns per item, {label} | {fmt(fig, f'overhead_ns_per_item/stoke/w{w}', 1, 1)}"
                   f" | {fmt(fig, f'overhead_ns_per_item/pytorch/w{w}', 1, 1) if w != 1 else '-'}"
                   f" | {fmt(fig, f'overhead_ns_per_item/libtorch/w{w}', 1, 1) if w != 1 else '-'} |")
    for w, label in ((0, "caller thread"), (1, "1 worker"), (2, "2 workers")):
        out.append(f"| overhead, us per batch of 64, {label} | "
                   f"{fmt(fig, f'overhead_ns_per_batch/stoke/w{w}', 1e-3, 2)} | - | - |")
    for w, label in ((0, "caller thread / num_workers 0"), (1, "1 worker"), (2, "2 workers")):
        out.append(f"| image, samples/s, {label} | {fmt(fig, f'image_samples_per_s/stoke/w{w}/d1')}"
                   f" | {fmt(fig, f'image_samples_per_s/pytorch/w{w}') if w != 1 else '-'}"
                   f" | {fmt(fig, f'image_samples_per_s/libtorch/w{w}') if w != 1 else '-'} |")
    for w in (0, 1, 2):
        out.append(f"| image, samples/s, {w} worker(s) per device, 2 CPU devices (split) | "
                   f"{fmt(fig, f'image_samples_per_s/stoke/w{w}/d2')} | - | - |")
    out.append(f"| image, samples/s, plain streaming copy (1 thread, no loader) | "
               f"{fmt(fig, 'image_samples_per_s/stream_copy')} | - | - |")
    out.append(f"| first batch of a new loader, 2 workers, ms | {fmt(fig, 'first_batch_s/stoke/w2/new', 1e3, 2)}"
               f" | {fmt(fig, 'first_batch_s/pytorch/w2/new', 1e3, 1)}"
               f" | {fmt(fig, 'first_batch_s/libtorch/w2/new', 1e3, 2)} |")
    out.append(f"| first batch of a new loader, 2 workers, mean of runs (not median), ms | "
               f"{fmt(fig, 'first_batch_mean_s/stoke/w2/new', 1e3, 2)} | - | - |")
    out.append(f"| first batch of a new loader, small items (batch 64), 2 workers, ms | "
               f"{fmt(fig, 'first_batch_s/stoke/w2/new_small', 1e3, 3)}"
               f" | {fmt(fig, 'first_batch_s/pytorch/w2/new_small', 1e3, 1)} | - |")
    out.append(f"| first batch of a later epoch, 2 workers, ms | {fmt(fig, 'first_batch_s/stoke/w2/later', 1e3, 2)}"
               f" | {fmt(fig, 'first_batch_s/pytorch/w2/later', 1e3, 1)} (persistent_workers: "
               f"{fmt(fig, 'first_batch_s/pytorch/w2/persistent', 1e3, 1)})"
               f" | {fmt(fig, 'first_batch_s/libtorch/w2/later', 1e3, 2)} |")
    out.append(f"| first batch of a new loader, batch storage from a pool the loaders share, 2 "
               f"workers, ms | {fmt(fig, 'first_batch_s/stoke/w2/new_shared_pool', 1e3, 2)}"
               f" | - | - |")
    if memory:
        out.append(f"| image, peak anonymous RSS growth, MiB (bound depth 4 x 12 MiB = "
                   f"{memory['peak_bound_mib']:.0f}) | {memory['peak_anon_growth_mib']:.1f} | - | - |")
    if "image_samples_per_s/stream_copy_2threads" in fig:
        out.append(f"| image, samples/s, plain streaming copy (2 threads, no loader) | "
                   f"{fmt(fig, 'image_samples_per_s/stream_copy_2threads')} | - | - |")
    if "image_samples_per_s/shuffled_copy_2threads" in fig:
        out.append(f"| image, samples/s, plain copy gathering each batch in shuffled order (2 "
                   f"threads, no loader) | {fmt(fig, 'image_samples_per_s/shuffled_copy_2threads')}"
                   f" | - | - |")
    for key, label in (("t1", "fresh memory (1 thread"), ("t2", "fresh memory (2 threads"),
                       ("t2_warm", "reused memory (2 threads")):
        if f"first_batch_s/copy/{key}" in fig:
            out.append(f"| one batch of 256 by a plain copy into {label} started for it, no "
                       f"loader), ms | {fmt(fig, f'first_batch_s/copy/{key}', 1e3, 3)} | - | - |")
    out += ["", "## Ratios", "", "| ratio | value | target | |", "| --- | ---: | --- | --- |"]
    out += [f"| `{name}` | {x:.3f} | {target} | {met} |" for name, x, target, met in rows]
    out += [
        "",
        "A ratio above 1 favours stoke (other loader's time over stoke's, or stoke's rate over "
        "the other's, the plain copy counting as another loader), except the memory ratio, "
        "which must stay at or below 1. The `_best_peer` ratios compare stoke's best with the "
        "best configuration of all the other loaders (table below).",
    ]
    if best_rows:
        out += [
            "",
            "## Peers at their best",
            "",
            "| peer, workload | peer's best | its configuration | stoke's best | "
            "stoke's configuration | stoke's lead |",
            "| --- | ---: | --- | ---: | --- | ---: |",
        ]
        digits = {(p, s): (scale, d) for _, p, s, _, scale, d in BEST_WORKLOADS}
        for label, value, config, ours, lead, prefix, suffix in best_rows:
            scale, d = digits[(prefix, suffix)]
            out.append(f"| {label} | {value * scale:,.{d}f} | {config} | "
                       f"{'-' if ours is None else f'{ours[0] * scale:,.{d}f}'} | "
                       f"{'-' if ours is None else ours[1]} | "
                       f"{'-' if lead is None else f'{lead:.2f}'} |")
        out += [
            "",
            "Each peer's best is the best of the configurations it ran (below); stoke's best is "
            "the best of its configurations with one consumer (the caller's thread, 1 or 2 "
            "workers; 2 workers for first batches). The lead is the peer's time over stoke's, "
            "or stoke's rate over the peer's: above 1 favours stoke.",
        ]
    if configs or skipped:
        out += ["", "## Peer configurations", "",
                "| peer / configuration | what it runs | overhead, ns per item | image, "
                "samples/s | first batch, ms | first batch, small items, ms |",
                "| --- | --- | ---: | ---: | ---: | ---: |"]
        for key, text in configs.items():
            peer, config = key.split("/", 1)
            out.append(f"| {key} | {text} | "
                       f"{fmt(fig, f'overhead_ns_per_item/{peer}/{config}', 1, 1)} | "
                       f"{fmt(fig, f'image_samples_per_s/{peer}/{config}')} | "
                       f"{fmt(fig, f'first_batch_s/{peer}/{config}/new', 1e3, 2)} | "
                       f"{fmt(fig, f'first_batch_s/{peer}/{config}/new_small', 1e3, 3)} |")
        for peer, reason in skipped.items():
            out.append(f"| {peer} | skipped: {reason.replace('|', '/')} | - | - | - | - |")
    # The section "From Python" (scripts/python-bench's last run), kept across this rewrite.
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
    from results_section import SOURCE, section
    python_section = section(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                          SOURCE))
    out += ["", python_section] if python_section else []
    out += [
        "",
        "![image throughput against workers](loader-throughput.png)",
        "",
        "Workloads: see `bench/loader_bench.cpp` and `bench/peers/`; what they mean and how to "
        "tune a loader: `book/docs/performance.md`.",
        "",
    ]
    with open(args.markdown, "w") as f:
        f.write("\n".join(out))


if __name__ == "__main__":
    main()

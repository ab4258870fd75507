"""Pictures of the loader benchmarks, drawn from their recorded results.

- bench/RESULTS.md, written by `./scripts/bench --peers` (the table under `## Figures`):
  image throughput against workers and against the plain streaming copy, and the time to the
  first batch against PyTorch and libtorch.
- book/results/image_bench.txt, written by `scripts/image-bench --repetitions 5`: decoding and
  augmenting JPEGs in stoke and its peers (DALI, PyTorch, torchdata, SPDL) against the bound.
"""
from __future__ import annotations

import re
import textwrap
from pathlib import Path

import matplotlib.pyplot as plt
from matplotlib.patches import Patch
from matplotlib.ticker import FuncFormatter

from data import ROOT, DataError, cell, markdown_table, read_text
from style import LIBRARY_COLORS, save

RESULTS = ROOT / "bench" / "RESULTS.md"
"""The loader benchmark's results (see the module's docstring)."""
IMAGE_BENCH = ROOT / "book" / "results" / "image_bench.txt"
"""The image benchmark's results (see the module's docstring)."""

STOKE, PYTORCH, LIBTORCH = 0, 1, 2
"""Columns of the figures table after the workload's name."""

IMAGE_ROWS = {
    0: "image, samples/s, caller thread / num_workers 0",
    1: "image, samples/s, 1 worker",
    2: "image, samples/s, 2 workers",
}
"""The rows of image throughput for one device, by workers."""
SPLIT_ROWS = {
    w: f"image, samples/s, {w} worker(s) per device, 2 CPU devices (split)" for w in (0, 1, 2)
}
"""The rows of image throughput on 2 CPU devices, by workers per device."""
STREAM_COPY = "image, samples/s, plain streaming copy (1 thread, no loader)"
"""The row of the bound: the same bytes copied by one thread with no loader."""


def figures_table() -> dict[str, list[str]]:
    """The table under `## Figures` of bench/RESULTS.md."""
    return markdown_table(RESULTS, "## Figures")


def thousands(value: float, _position: object = None) -> str:
    """An axis label in thousands: 250k."""
    return f"{value / 1000:.0f}k" if value >= 1000 else f"{value:.0f}"


def throughput(out: Path) -> Path:
    """throughput.svg: image samples per second against worker threads, for stoke on 1 and 2
    CPU devices, PyTorch's DataLoader and libtorch, with the plain streaming copy as a line."""
    table = figures_table()
    figure, axes = plt.subplots(figsize=(7.5, 4.2))
    series = [  # label, rows, column, colour, marker, line, where the values are written
        ("stoke, 1 device", IMAGE_ROWS, STOKE, LIBRARY_COLORS["stoke"], "o", "-", (6, 4)),
        ("stoke, 2 CPU devices (split), workers per device", SPLIT_ROWS, STOKE,
         LIBRARY_COLORS["stoke"], "s", "--", (6, -11)),
        ("PyTorch DataLoader", IMAGE_ROWS, PYTORCH, LIBRARY_COLORS["PyTorch DataLoader"], "o",
         "-", (6, -11)),
        ("libtorch torch::data", IMAGE_ROWS, LIBTORCH, LIBRARY_COLORS["libtorch"], "o", "-",
         (6, 4)),
    ]
    for label, rows, column, color, marker, line, offset in series:
        points = [(w, cell(RESULTS, table, row, column)) for w, row in rows.items()]
        points = [(w, v) for w, v in points if v is not None]
        if not points:
            raise DataError(RESULTS, f"has no figure for {label}")
        axes.plot([w for w, _ in points], [v for _, v in points], marker=marker, linestyle=line,
                  color=color, label=label)
        for w, v in points:
            axes.annotate(thousands(v), (w, v), textcoords="offset points", xytext=offset,
                          fontsize=7, color=color)
    bound = cell(RESULTS, table, STREAM_COPY, STOKE)
    axes.axhline(bound, color=LIBRARY_COLORS["bound"], linestyle=":", linewidth=1.5,
                 label=f"plain streaming copy of the same bytes, 1 thread: {thousands(bound)}")
    axes.set_yscale("log")
    axes.yaxis.set_major_formatter(FuncFormatter(thousands))
    axes.yaxis.set_minor_formatter(FuncFormatter(lambda v, _: ""))
    axes.set_xticks([0, 1, 2], ["0 (caller's thread)", "1", "2"])
    axes.set_xlim(-0.2, 2.3)
    axes.set(xlabel="worker threads (per device)", ylabel="samples/s (log scale)",
             title="Image-like batches (3x64x64 uint8 -> float32, batch 256)")
    axes.grid(alpha=0.3, which="both", axis="y")
    axes.legend(fontsize=8, loc="center left", bbox_to_anchor=(0.0, 0.42), frameon=False)
    path = out / "throughput.svg"
    save(figure, path)
    return path


def first_batch(out: Path) -> Path:
    """first_batch.svg: milliseconds to the first batch, on a log scale, of a new loader (image
    and small items) and of a later epoch, for stoke, PyTorch's DataLoader and libtorch."""
    table = figures_table()
    cases = [
        ("new loader, image batch", "first batch of a new loader, 2 workers, ms"),
        ("new loader, small items",
         "first batch of a new loader, small items (batch 64), 2 workers, ms"),
        ("later epoch, image batch", "first batch of a later epoch, 2 workers, ms"),
    ]
    loaders = [("stoke", STOKE), ("PyTorch DataLoader", PYTORCH), ("libtorch", LIBTORCH)]
    bars = []  # (case, loader, ms)
    for case, row in cases:
        for loader, column in loaders:
            value = cell(RESULTS, table, row, column)
            if value is not None:
                bars.append((case, loader, value))
    persistent = re.search(r"persistent_workers: ([\d.]+)",
                           table["first batch of a later epoch, 2 workers, ms"][PYTORCH])
    if persistent:
        bars.append(("later epoch, image batch", "PyTorch, persistent_workers",
                     float(persistent.group(1))))
    figure, axes = plt.subplots(figsize=(7.5, 4.0))
    y = 0.0
    ticks, labels = [], []
    for case, _ in cases:
        mine = [b for b in bars if b[0] == case]
        for _, loader, value in mine:
            color = LIBRARY_COLORS.get(loader, LIBRARY_COLORS["PyTorch DataLoader"])
            axes.barh(y, value, color=color, hatch="//" if "persistent" in loader else None,
                      edgecolor="white")
            axes.text(value * 1.08, y, f"{value:g} ms", va="center", fontsize=7.5)
            ticks.append(y)
            labels.append(loader)
            y -= 1
        axes.text(1.01, (ticks[-len(mine)] + ticks[-1]) / 2, case, va="center", fontsize=8,
                  weight="bold", transform=axes.get_yaxis_transform())
        y -= 0.6
    axes.set_xscale("log")
    axes.set_yticks(ticks, labels)
    axes.set_xlim(0.02, 500)
    axes.set(xlabel="ms to the first batch (log scale; 2 workers, median of single loaders)",
             title="Time to the first batch")
    axes.grid(alpha=0.3, axis="x", which="major")
    path = out / "first_batch.svg"
    save(figure, path)
    return path


STOKE_LINE = re.compile(
    r"^(?P<name>(?:stoke|bound), .*?)\s{2,}(?P<rate>\d+) images/s \(.*?\)\s+"
    r"(?P<share>[\d.]+) of the bound"
)
"""A line of stoke (or of the bound) in image_bench.txt."""
PEER_LINE = re.compile(
    r"^(?P<library>PyTorch DataLoader|DALI|SPDL|torchdata nodes): (?P<name>.*?)\s+(?P<rate>\d+)\s+"
    r"(?P<share>[\d.]+)\s+(?P<first>[\d.]+) ms$"
)
"""A line of a peer in image_bench.txt: library, configuration, images/s, share, first batch."""


def image_results() -> tuple[list[tuple[str, str, float, float]], float]:
    """The configurations of image_bench.txt as (library, configuration, images/s, share of
    the bound), and the bound (2 threads) in images/s."""
    rows = []
    bound = None
    for line in read_text(IMAGE_BENCH).splitlines():
        if match := STOKE_LINE.match(line):
            name, rate = match["name"], float(match["rate"])
            if name.startswith("bound, 2 threads"):
                bound = rate
            elif name.startswith("stoke"):
                rows.append(("stoke", name.removeprefix("stoke, "), rate, float(match["share"])))
        elif match := PEER_LINE.match(line):
            rows.append((match["library"], match["name"], float(match["rate"]),
                         float(match["share"])))
    if bound is None:
        raise DataError(IMAGE_BENCH, "has no line 'bound, 2 threads ... images/s'")
    if not any(r[0] == "stoke" for r in rows) or not any(r[0] != "stoke" for r in rows):
        raise DataError(IMAGE_BENCH, "lacks the lines of stoke or of its peers")
    return rows, bound


def image_bench(out: Path) -> Path:
    """image_bench.svg: images per second of every configuration in the image benchmark
    (stoke, DALI, PyTorch's DataLoader, torchdata, SPDL), against the bound of decoding the
    same JPEGs in memory on both cores."""
    rows, bound = image_results()
    rows.sort(key=lambda r: r[2])
    figure, axes = plt.subplots(figsize=(10.0, 0.42 * len(rows) + 1.6))
    for y, (library, name, rate, share) in enumerate(rows):
        axes.barh(y, rate, color=LIBRARY_COLORS[library], edgecolor="white")
        axes.text(rate + bound * 0.01, y, f"{rate:,.0f}  ({share:.2f})", va="center",
                  fontsize=7)
    labels = [textwrap.fill(f"{lib}: {name}", 80) for lib, name, _, _ in rows]
    axes.set_yticks(range(len(rows)), labels, fontsize=6.5)
    axes.set_ylim(-0.6, len(rows) + 0.4)
    axes.axvline(bound, color=LIBRARY_COLORS["bound"], linestyle=":", linewidth=1.5)
    axes.text(bound * 0.99, len(rows) - 0.1, "bound: the same decode and augmentation\n"
              "of JPEGs in memory, no loader, 2 threads", ha="right", va="center", fontsize=7,
              color="#555555")
    axes.set_xlim(0, bound * 1.12)
    libraries = list(dict.fromkeys(r[0] for r in reversed(rows)))
    axes.legend(handles=[Patch(color=LIBRARY_COLORS[lib], label=lib) for lib in libraries],
                loc="lower right", fontsize=8, frameon=False)
    axes.xaxis.set_major_formatter(FuncFormatter(thousands))
    axes.set(xlabel="images/s (in brackets: share of the bound); 2 cores, 64x64 JPEGs, "
                    "crop to 56, batch 256",
             title="Decoding and augmenting JPEGs")
    axes.grid(alpha=0.3, axis="x")
    path = out / "image_bench.svg"
    save(figure, path)
    return path

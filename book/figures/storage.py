"""The read-ahead of shards from object storage against the consumer, measured.

The data is book/results/storage_timeline.json, written by `bench/storage_bench --timeline-json`
(scripts/storage-bench): one epoch of `.npy` shards from SeaweedFS through a proxy that limits
the bandwidth to a link's, twice: with a consumer that takes a stand-in training step with each
batch (slower than the link) and with one that takes none. For each run, every read of the
store as [shard, begin, end] and every batch as [asked, got], in ms from opening the dataset.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import matplotlib.pyplot as plt
from matplotlib.axes import Axes
from matplotlib.patches import Patch

from data import ROOT, DataError, field, read_json
from style import DEVICE_COLORS, WAIT_COLOR, WORK_COLOR, save

READ_COLOR = DEVICE_COLORS[2]
"""The store's reads (one colour: the number on a read names its shard)."""

TIMELINE = ROOT / "book" / "results" / "storage_timeline.json"
"""The recorded timelines (see the module's docstring)."""


def intervals(run: Any, key: str, width: int) -> list[list[float]]:
    """The rows of `key` in one run, each of `width` numbers ending in [begin, end], in order."""
    rows = field(TIMELINE, run, key)
    if not rows:
        raise DataError(TIMELINE, f"a run has no {key}")
    for row in rows:
        if len(row) != width or row[-2] > row[-1]:
            raise DataError(TIMELINE, f"{key} has a row that does not end in [begin, end]: {row}")
    return rows


def lanes(reads: list[list[float]]) -> list[int]:
    """A lane for each read, so that reads at the same time lie on different lanes: the
    lowest lane free when the read begins."""
    ends: list[float] = []
    out = []
    for _, begin, end in reads:
        lane = next((i for i, e in enumerate(ends) if e <= begin), len(ends))
        if lane == len(ends):
            ends.append(end)
        else:
            ends[lane] = end
        out.append(lane)
    return out


def draw_run(axes: Axes, run: Any) -> float:
    """One run: the store's reads on their lanes (numbered by shard), and below them
    the consumer: waiting for a batch, then its step. Returns the run's end in ms."""
    reads = sorted(intervals(run, "reads", 3), key=lambda r: r[1])
    batches = intervals(run, "batches", 2)
    step_ms = float(field(TIMELINE, run, "step_ms"))
    read_lanes = lanes(reads)
    top = max(read_lanes) + 1
    for (shard, begin, end), lane in zip(reads, read_lanes):
        y = 1.2 + lane
        axes.broken_barh([(begin, end - begin)], (y, 0.7),
                         color=READ_COLOR,
                         edgecolor="white", linewidth=0.5)
        axes.text((begin + end) / 2, y + 0.35, str(int(shard)), ha="center", va="center",
                  fontsize=6.5, color="white")
    axes.broken_barh([(a, g - a) for a, g in batches], (0, 0.7), color=WAIT_COLOR)
    if step_ms > 0:
        axes.broken_barh([(g, step_ms) for _, g in batches], (0, 0.7), color=WORK_COLOR,
                         edgecolor="white", linewidth=0.3)
    else:
        axes.vlines([g for _, g in batches], 0, 0.7, color=WORK_COLOR, linewidth=0.8)
    axes.set_yticks([0.35] + [1.55 + lane for lane in range(top)],
                    ["consumer"] + [f"read {lane + 1}" for lane in range(top)])
    axes.set_ylim(-0.3, 1.2 + top)
    axes.spines["left"].set_visible(False)
    axes.tick_params(axis="y", length=0)
    end = max(batches[-1][1] + step_ms, reads[-1][2])
    waited = sum(g - a for a, g in batches[1:])
    axes.set_title(
        f"{'a ' + format(step_ms, 'g') + ' ms step a batch' if step_ms > 0 else 'no step'}: "
        f"{len(batches)} batches in {end:.0f} ms; after the first batch the consumer waited "
        f"{waited:.0f} ms in all", fontsize=8.5, loc="left")
    return end


def readahead_timeline(out: Path) -> Path:
    """storage_timeline.svg: one epoch of shards over a limited link, the store's reads (the
    read-ahead, in the order the epoch visits the shards) against the consumer, with a
    consumer slower than the link and with one that takes no time."""
    data = read_json(TIMELINE)
    runs = field(TIMELINE, data, "runs")
    if len(runs) != 2:
        raise DataError(TIMELINE, f"expected 2 runs, found {len(runs)}")
    figure, axes = plt.subplots(2, 1, figsize=(9.0, 4.8), sharex=True)
    end = max(draw_run(a, run) for a, run in zip(axes, runs))
    for a in axes:
        a.set_xlim(0, end * 1.01)
    axes[-1].set_xlabel("ms from opening the dataset")
    figure.suptitle(
        f"{field(TIMELINE, data, 'shards')} shards of "
        f"{field(TIMELINE, data, 'shard_mib'):.1f} MiB from S3 over a "
        f"{field(TIMELINE, data, 'link_gbit'):g} Gbit/s link: "
        f"{field(TIMELINE, data, 'io_threads')} I/O threads, "
        f"{field(TIMELINE, data, 'resident')} shards resident, batches of "
        f"{field(TIMELINE, data, 'batch')}", fontsize=9.5)
    figure.legend(handles=[Patch(color=READ_COLOR, label="a read of the store (shard number)"),
                           Patch(color=WAIT_COLOR, label="the consumer waits for a batch"),
                           Patch(color=WORK_COLOR, label="the consumer's step")],
                  loc="lower center", ncol=3, fontsize=8, frameon=False)
    figure.tight_layout(rect=(0, 0.06, 1, 1))
    path = out / "storage_timeline.svg"
    save(figure, path)
    return path

"""A measured timeline of training steps with and without device prefetch.

The data is book/results/prefetch_timeline.json, written by
`build/default/bench/prefetch_overlap --backend vulkan --timeline-json
book/results/prefetch_timeline.json`:
for one run of each, every step's [asked, got, ready, done] in ms from the start of the run
(the consumer asked for the next batch, got it, had it on the device, ended the step).
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import matplotlib.pyplot as plt
from matplotlib.axes import Axes
from matplotlib.patches import Patch

from data import ROOT, DataError, field, read_json
from style import WAIT_COLOR, WORK_COLOR, save

TIMELINE = ROOT / "book" / "results" / "prefetch_timeline.json"
"""The recorded timelines (see the module's docstring)."""

UPLOAD_COLOR = "#E69F00"
"""Time the consumer spends uploading a batch and waiting for its fence."""


def steps(backend: Any, key: str) -> list[list[float]]:
    """The steps of one run, each [asked, got, ready, done], checked to be in order."""
    rows = field(TIMELINE, backend, key)
    if not rows:
        raise DataError(TIMELINE, f"{key} has no steps")
    for row in rows:
        if len(row) != 4 or sorted(row) != list(row):
            raise DataError(TIMELINE, f"{key} has a step that is not [asked, got, ready, done] "
                            f"in order: {row}")
    return rows


def draw_run(axes: Axes, y: float, rows: list[list[float]]) -> None:
    """One run on one line: waiting for the batch, uploading it, and the step."""
    axes.broken_barh([(a, g - a) for a, g, _, _ in rows], (y, 0.6), color=WAIT_COLOR)
    axes.broken_barh([(g, r - g) for _, g, r, _ in rows], (y, 0.6), color=UPLOAD_COLOR)
    axes.broken_barh([(r, d - r) for _, _, r, d in rows], (y, 0.6), color=WORK_COLOR,
                     edgecolor="white", linewidth=0.4)


def prefetch_timeline(out: Path) -> Path:
    """prefetch_timeline.svg: every step of one epoch on the first device backend recorded,
    without prefetch (wait for the host batch, upload it and wait for its fence, step) and
    with prefetch_to_device (the batch is already on the device), over the whole epoch and
    zoomed in on a few steps."""
    data = read_json(TIMELINE)
    backend = field(TIMELINE, data, "backends", 0)
    without = steps(backend, "steps_without_prefetch")
    with_prefetch = steps(backend, "steps_with_prefetch")
    step_ms = float(field(TIMELINE, backend, "step_ms"))
    figure, (whole, zoom) = plt.subplots(2, 1, figsize=(9.0, 4.4),
                                         gridspec_kw={"height_ratios": [1, 1]})
    runs = [("without prefetch", without), ("with prefetch_to_device", with_prefetch)]
    for axes in (whole, zoom):
        for y, (_, rows) in zip((1, 0), runs):
            draw_run(axes, y, rows)
        axes.set_yticks([1.3, 0.3], [label for label, _ in runs])
        axes.set_ylim(-0.2, 1.8)
        axes.spines["left"].set_visible(False)
        axes.tick_params(axis="y", length=0)
    end = max(without[-1][3], with_prefetch[-1][3])
    whole.set_xlim(0, end * 1.01)
    for y, (_, rows) in zip((1, 0), runs):
        per_step = (rows[-1][3] - rows[0][3]) / (len(rows) - 1)
        whole.text(rows[-1][3] + end * 0.01, y + 0.3, f"{len(rows)} steps in {rows[-1][3]:.0f} ms\n"
                   f"{per_step:.2f} ms per step after the first", va="center", fontsize=7.5)
    whole.set_xlim(0, end * 1.25)
    whole.set_title(
        f"One epoch on {field(TIMELINE, backend, 'device')}:\nbatches of "
        f"{field(TIMELINE, backend, 'batch_size')} x 3x64x64 uint8 "
        f"({field(TIMELINE, backend, 'batch_mib'):.0f} MiB), a {step_ms:g} ms step, "
        f"{field(TIMELINE, backend, 'workers')} worker, "
        f"prefetch depth {field(TIMELINE, backend, 'depth')}",
        fontsize=9)
    first = min(len(without), len(with_prefetch)) // 3
    start = min(without[first][0], with_prefetch[first][0])
    zoom.set_xlim(start, start + 6 * (step_ms + 1))
    zoom.set_xlabel("ms from the start of the run (below: a few steps, zoomed in)")
    figure.legend(handles=[Patch(color=WAIT_COLOR, label="waiting for the next batch"),
                           Patch(color=UPLOAD_COLOR, label="upload and wait for its fence"),
                           Patch(color=WORK_COLOR, label="the step (busy-wait)")],
                  loc="lower center", ncol=3, frameon=False, bbox_to_anchor=(0.5, -0.05),
                  fontsize=8)
    figure.tight_layout()
    path = out / "prefetch_timeline.svg"
    save(figure, path)
    return path

"""The way of a sample, from the dataset to the all-reduce: a drawn diagram (no data file).

The labels are stoke's own names: `Dataset`, `MultiThreadLoader` and its worker threads, the
`Batcher` that is told the device, the bounded queue of `queue_depth` batches, `iter()`,
`prefetch_to_device` (`PrefetchLoader`, a backend's `Stager` and fence), the `Learner` with a
`TrainStep` or `DeviceTrainStep` per device, and the all-reduce of its `Collective`.
"""
from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
from matplotlib.axes import Axes
from matplotlib.patches import FancyArrowPatch, FancyBboxPatch, Rectangle

from style import DEVICE_COLORS, save

BOXES = [
    # (x, width, title, what it does)
    (2.9, 2.6, "worker threads",
     "MultiThreadLoader:\nnum_workers threads,\nstarted on the first iter()"),
    (6.0, 2.7, "Batcher", "batch(items, device)\nbuilds the batch\nfor this device"),
    (9.2, 2.4, "bounded queue", "queue_depth batches,\nin step order, to iter()"),
    (12.1, 2.8, "device prefetch",
     "prefetch_to_device:\nthe Stager copies to\nthe device; a fence"),
    (15.4, 2.4, "train step", "TrainStep or\nDeviceTrainStep\non the device"),
]
"""The boxes of one device's row, left to right."""


def box(axes: Axes, x: float, y: float, width: float, height: float, title: str, body: str,
        color: str) -> None:
    """A rounded box with a bold `title` above a smaller `body`."""
    axes.add_patch(FancyBboxPatch((x, y), width, height,
                                  boxstyle="round,pad=0.02,rounding_size=0.15",
                                  facecolor=color, edgecolor="#333333", linewidth=1))
    axes.text(x + width / 2, y + height - 0.28, title, ha="center", va="center", weight="bold")
    axes.text(x + width / 2, y + height - 0.55, body, ha="center", va="top", fontsize=7.5,
              linespacing=1.3)


def arrow(axes: Axes, start: tuple[float, float], end: tuple[float, float], text: str = "",
          style: str = "-|>", color: str = "#333333", offset: float = 0.18) -> None:
    """An arrow from `start` to `end`, with `text` above its middle."""
    axes.add_patch(FancyArrowPatch(start, end, arrowstyle=style, mutation_scale=12,
                                   color=color, linewidth=1.2))
    if text:
        axes.text((start[0] + end[0]) / 2, (start[1] + end[1]) / 2 + offset, text,
                  ha="center", va="bottom", fontsize=7, color="#444444")


def device_row(axes: Axes, y: float, device: int) -> None:
    """One device's row: the boxes of its share of the loader, and the batches between them."""
    color = DEVICE_COLORS[device] + "40"  # the device's colour, light
    axes.add_patch(Rectangle((2.7, y - 0.25), 15.35, 2.3, facecolor=color, edgecolor="none"))
    axes.text(2.8, y + 1.85,
              f"device {device}: its share of the loader (cpu:{device}, cuda:{device}, ...)",
              fontsize=7.5, style="italic", va="center")
    height = 1.55
    for x, width, title, body in BOXES:
        box(axes, x, y, width, height, title, body, "white")
    for (x0, w0, *_), (x1, *_) in zip(BOXES, BOXES[1:]):
        arrow(axes, (x0 + w0 + 0.02, y + height / 2), (x1 - 0.02, y + height / 2))
    # Slots of the bounded queue.
    queue_x, queue_w = BOXES[2][0], BOXES[2][1]
    for k in range(2):
        axes.add_patch(Rectangle((queue_x + queue_w / 2 - 0.5 + k * 0.6, y + 0.12), 0.4, 0.2,
                                 facecolor=DEVICE_COLORS[device], edgecolor="#333333",
                                 linewidth=0.6))


def pipeline(out: Path) -> Path:
    """pipeline.svg: the dataset feeds one loader part per device (split), whose worker
    threads make batches with a batcher told the device, through a bounded queue and device
    prefetch into the train step; the devices' gradients meet in one all-reduce."""
    figure = plt.figure(figsize=(11.5, 4.6))
    axes = figure.add_axes((0, 0, 1, 1))
    axes.set_xlim(-0.2, 21.4)
    axes.set_ylim(-0.75, 5.9)
    axes.set_aspect("equal")
    axes.set_axis_off()

    top, bottom = 3.1, 0.3
    box(axes, 0.0, 1.05, 2.0, 2.8, "Dataset", "get(i) -> sample\n\nsize()", "#f3f3f3")
    for device, y in enumerate((top, bottom)):
        device_row(axes, y, device)
        arrow(axes, (2.0, 2.45 if device == 0 else 2.45), (2.88, y + 0.78))
    axes.text(2.45, 2.45, "split", ha="center", va="center", fontsize=7, rotation=90,
              color="#444444", bbox=dict(facecolor="white", edgecolor="none", pad=0.5))

    box(axes, 18.9, bottom, 2.3, top + 1.55 - bottom, "all-reduce",
        "all_reduce_sum of\n[grads | loss,\ncount, correct]\nover the devices\n(the backend's\n"
        "Collective), and\nacross ranks\n(ProcessGroup)\n\nthen the optimizer\n"
        "step, sharded over\nthe devices (ZeRO-1),\nand all_gather",
        "#f3f3f3")
    for y in (top, bottom):
        arrow(axes, (17.82, y + 1.15), (18.88, y + 1.15), "gradients", offset=0.05)
        arrow(axes, (18.88, y + 0.4), (17.82, y + 0.4), "weights", offset=0.05,
              color="#888888")
    axes.text(10.6, 5.75,
              "Learner::fit(loader) splits the loader over its devices; each part runs on a thread "
              "of its device, and every queue is bounded",
              ha="center", va="center", fontsize=8)
    axes.text(10.6, -0.55,
              "bounded: at most queue_depth host batches wait in a part's queue, "
              "and prefetch depth "
              "device batches (with as many staging buffers) in its prefetch",
              ha="center", va="center", fontsize=7.5, color="#444444")
    path = out / "pipeline.svg"
    save(figure, path)
    return path

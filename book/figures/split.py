"""Pictures of the interleaved split, drawn from what the loaders delivered.

The data is book/results/split_layout.json, written by
`build/default/examples/where_samples_go/where_samples_go --layout-json
book/results/split_layout.json`
(the test `book_split_layout_is_current` checks that it is current). Every batch is placed on
the epoch's positions where the lockstep order of the devices puts it (step 0 of every device,
then step 1, ...), and the drawing checks that its real items were read from exactly those
positions: a picture of a rule the loaders do not follow cannot be drawn.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import matplotlib.pyplot as plt
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.patches import Patch, Rectangle

from data import DataError, ROOT, field, read_json
from style import DEVICE_COLORS, PADDING_GREY, item_box, save

LAYOUT = ROOT / "book" / "results" / "split_layout.json"
"""Where each batch of one epoch went, split several ways (see the module's docstring)."""

ROW = 2.4
"""Height of one row of the picture, in item boxes."""


@dataclass
class Placed:
    """One delivered batch, placed on the epoch's positions."""

    first: int  # the first position the lockstep order gives it
    part: int  # the part's place in the data (rank-major): its colour
    who: str  # which device (and rank) got it
    step: int  # at which step
    indices: list[int]  # dataset indices, padding last
    positions: list[int]  # the position of each item in the epoch order (padding: repeated)
    padding: int  # how many trailing items repeat other samples

    @property
    def label(self) -> str:
        """Who got the batch at which step, on two lines if the name is long."""
        return f"{self.who}{chr(10) if ' ' in self.who else ' '}step {self.step}"


@dataclass
class Phase:
    """A split of the epoch, or of what was left of it, and the batches its parts delivered."""

    title: str
    offset: int  # positions consumed before this phase
    stopped: bool  # whether the parts stopped before the end of the epoch
    dropped: bool  # whether positions that do not fill a round are dropped
    batches: list[Placed]


@dataclass
class Scenario:
    """One dataset size and batch size, its epoch order, and its phases."""

    samples: int
    batch_size: int
    order: list[int]
    phases: list[Phase]


def scenario(layout: Any, scenario_id: str, titles: list[str]) -> Scenario:
    """The scenario `scenario_id` of the layout JSON, with its phases titled `titles`."""
    for entry in field(LAYOUT, layout, "scenarios"):
        if field(LAYOUT, entry, "id") == scenario_id:
            break
    else:
        raise DataError(LAYOUT, f"has no scenario {scenario_id!r}")
    samples = int(field(LAYOUT, entry, "samples"))
    batch = int(field(LAYOUT, entry, "batch_size"))
    order = [int(i) for i in field(LAYOUT, entry, "order")]
    if sorted(order) != list(range(samples)):
        raise DataError(LAYOUT, f"scenario {scenario_id}: the order is not a permutation")
    phases = field(LAYOUT, entry, "phases")
    if len(phases) != len(titles):
        raise DataError(LAYOUT, f"scenario {scenario_id}: {len(titles)} phases expected")
    return Scenario(
        samples,
        batch,
        order,
        [
            lockstep(scenario_id, phase, title, samples, batch, entry["remainder"] == "drop_last")
            for phase, title in zip(phases, titles)
        ],
    )


def lockstep(
    scenario_id: str, phase: Any, title: str, samples: int, batch: int, dropped: bool
) -> Phase:
    """Places every batch of `phase` where the lockstep order of its parts puts it, and checks
    that its real items were read from those positions."""
    parts = field(LAYOUT, phase, "parts")
    ranks = int(field(LAYOUT, phase, "ranks"))
    offset = int(field(LAYOUT, parts, 0, "offset"))

    def first_position(part: Any) -> float:
        first = field(LAYOUT, part, "batches", 0)
        return first["positions"][0] if first["padding"] == 0 else float("inf")

    in_round = sorted(range(len(parts)), key=lambda k: first_position(parts[k]))
    placed = []
    for place, k in enumerate(in_round):
        part = parts[k]
        device = field(LAYOUT, part, "device")
        who = f"rank {part['rank']} {device}" if ranks > 1 else device
        batches = field(LAYOUT, part, "batches")
        first_step = int(field(LAYOUT, batches, 0, "step"))
        for b in batches:
            step = int(field(LAYOUT, b, "step"))
            first = offset + ((step - first_step) * len(parts) + place) * batch
            indices = [int(i) for i in field(LAYOUT, b, "indices")]
            padding = int(field(LAYOUT, b, "padding"))
            positions = [int(p) for p in field(LAYOUT, b, "positions")]
            real = positions[: len(indices) - padding]
            if real != list(range(first, first + len(real))):
                raise DataError(
                    LAYOUT,
                    f"scenario {scenario_id}: {who} step {step} read positions {real}, "
                    f"not those from {first} that the lockstep order gives it",
                )
            placed.append(Placed(first, k, who, step, indices, positions, padding))
    stopped = int(field(LAYOUT, phase, "stopped_after_steps")) != 0
    return Phase(title, offset, stopped, dropped, placed)


def lighter(color: str) -> str:
    """`color` mixed half with white: the colour of padding items."""
    rgb = [int(color[i : i + 2], 16) for i in (1, 3, 5)]
    return "#" + "".join(f"{(c + 255) // 2:02x}" for c in rgb)


def draw_order(axes: Axes, y: float, s: Scenario) -> None:
    """The epoch order: the dataset index at every position, grouped into batches."""
    axes.text(-0.6, y + 0.4, "epoch 0 order", ha="right", va="center", weight="bold")
    for position, index in enumerate(s.order):
        item_box(axes, position, y, str(index), "white")
        axes.text(position + 0.5, y - 0.25, str(position), ha="center", va="center",
                  fontsize=7, color="#666666")
    for first in range(0, s.samples, s.batch_size):
        width = min(s.batch_size, s.samples - first)
        axes.add_patch(Rectangle((first, y), width, 0.8, fill=False, linewidth=2))
        axes.text(first + width / 2, y + 1.05, f"batch {first // s.batch_size}",
                  ha="center", va="center", fontsize=8)
    axes.text(s.samples + 0.2, y - 0.25, "positions", va="center", fontsize=7, color="#666666")


def draw_phase(axes: Axes, y: float, s: Scenario, phase: Phase, small: bool) -> None:
    """One split: every position of the epoch, and on it each batch in its device's colour.
    Under a padded item, the position whose sample it repeats."""
    axes.text(-0.6, y + 0.4, phase.title, ha="right", va="center", weight="bold")
    covered = {b.first + j for b in phase.batches for j in range(len(b.indices) - b.padding)}
    for position, index in enumerate(s.order):  # what no batch of this phase reads
        if position in covered:
            continue
        if position < phase.offset:
            item_box(axes, position, y, str(index), "white", text_color="#aaaaaa")
        elif phase.stopped:
            item_box(axes, position, y, str(index), "white", hatch="..", text_color="#666666")
        else:
            item_box(axes, position, y, str(index), PADDING_GREY, hatch="xx")
    if phase.offset:
        axes.text(phase.offset / 2, y - 0.3, f"state: consumed = {phase.offset}", ha="center",
                  va="center", fontsize=7, color="#666666")
        axes.plot([phase.offset, phase.offset], [y - 0.5, y + ROW - 0.4], linestyle="--",
                  color="#666666", linewidth=1)
    for b in phase.batches:
        draw_batch(axes, b.first, y, b)
        if b.padding:
            for j in range(len(b.indices) - b.padding, len(b.indices)):
                axes.text(b.first + j + 0.5, y - 0.25, f"pos {b.positions[j]}", ha="center",
                          va="center", fontsize=7, color="#666666")
        axes.text(b.first + len(b.indices) / 2, y + (1.2 if small else 1.05), b.label,
                  ha="center", va="center", fontsize=7 if small else 8)


def draw_batch(axes: Axes, x: float, y: float, b: Placed) -> None:
    """The items of batch `b` from (x, y), in its device's colour, padding hatched and marked *."""
    color = DEVICE_COLORS[b.part]
    real = len(b.indices) - b.padding
    for j, index in enumerate(b.indices):
        padded = j >= real
        item_box(axes, x + j, y, f"{index}*" if padded else str(index),
                 lighter(color) if padded else color, hatch="///" if padded else None)
    axes.add_patch(Rectangle((x, y), len(b.indices), 0.8, fill=False, linewidth=2))


def draw_per_device(axes: Axes, y: float, phase: Phase, batch: int) -> float:
    """What each device trains on, in step order, one row per device from `y` down; returns
    the height used."""
    axes.text(-0.6, y + 0.4, "each device,\nstep by step", ha="right", va="center",
              weight="bold")
    parts = sorted({b.part for b in phase.batches})
    for row, part in enumerate(parts):
        mine = sorted((b for b in phase.batches if b.part == part), key=lambda b: b.step)
        row_y = y - row * 1.1
        axes.text(0, row_y + 0.4, mine[0].who, ha="left", va="center")
        for column, b in enumerate(mine):
            x = 4 + column * (len(b.indices) + 2)
            draw_batch(axes, x, row_y, b)
            axes.text(x + len(b.indices) + 0.1, row_y + 0.4, f"batch {b.first // batch}",
                      va="center", fontsize=7, color="#666666")
    for column in range(max(b.step for b in phase.batches) + 1):
        axes.text(4 + column * (batch + 2) + batch / 2, y + 1.05, f"step {column}",
                  ha="center", va="center", fontsize=8)
    return len(parts) * 1.1 + 0.6


def figure_of(s: Scenario, small: bool = False, per_device: bool = False) -> Figure:
    """The epoch order of `s` above each of its phases (and, with `per_device`, the batches of
    each device of the last phase in step order)."""
    width = max(b.first + len(b.indices) for p in s.phases for b in p.batches)
    width = max(width, s.samples + 2.5)
    rows = [0.0] + [-(k + 1) * ROW for k in range(len(s.phases))]
    below = len({b.part for b in s.phases[-1].batches}) * 1.1 + 1.3 if per_device else 0.0
    left, top, bottom = -6.0, 1.9, rows[-1] - 0.6 - below
    scale = 0.5
    figure = plt.figure(figsize=((width + 0.5 - left) * scale, (top - bottom) * scale))
    axes = figure.add_axes((0, 0, 1, 1))
    axes.set_xlim(left, width + 0.5)
    axes.set_ylim(bottom, top)
    axes.set_aspect("equal")
    axes.set_axis_off()
    draw_order(axes, 0, s)
    for y, phase in zip(rows[1:], s.phases):
        draw_phase(axes, y, s, phase, small)
    if per_device:
        draw_per_device(axes, rows[-1] - ROW + 0.2, s.phases[-1], s.batch_size)
    return figure


def legend(figure: Figure, entries: list[tuple[str, str, str | None]]) -> None:
    """A legend below the picture: (label, face colour, hatch) per entry."""
    handles = [Patch(facecolor=c, edgecolor="#333333", hatch=h, label=t) for t, c, h in entries]
    figure.legend(handles=handles, loc="upper center", ncol=len(handles), frameon=False,
                  bbox_to_anchor=(0.5, 0.0), fontsize=8)


def split(out: Path) -> Path:
    """split.svg: 10 samples in batches of 2 on 2 devices and on 3 (pad()), and on 3 with
    drop_last(): device k takes batch k of every round; the last round is padded by wrapping
    around to the start of the epoch (marked *), or left out."""
    layout = read_json(LAYOUT)
    s = scenario(layout, "split_2", ["2 devices, pad()"])
    s.phases += scenario(layout, "split_3", ["3 devices, pad()"]).phases
    s.phases += scenario(layout, "split_3_drop_last", ["3 devices, drop_last()"]).phases
    figure = figure_of(s)
    legend(figure, [("cpu:0", DEVICE_COLORS[0], None), ("cpu:1", DEVICE_COLORS[1], None),
                    ("cpu:2", DEVICE_COLORS[2], None),
                    ("padding (repeats a sample)", "#eeeeee", "///"),
                    ("dropped this epoch", PADDING_GREY, "xx")])
    path = out / "split.svg"
    save(figure, path)
    return path


def resume(out: Path) -> Path:
    """resume.svg: the same epoch stopped on 2 devices after one step each and resumed on 3:
    the consumed positions are a prefix, and the rest is split again by the same rule."""
    s = scenario(read_json(LAYOUT), "resume_2_to_3",
                 ["2 devices, stopped\nafter step 0", "restored onto\n3 devices"])
    figure = figure_of(s)
    legend(figure, [("cpu:0", DEVICE_COLORS[0], None), ("cpu:1", DEVICE_COLORS[1], None),
                    ("cpu:2", DEVICE_COLORS[2], None), ("not read before the stop", "white", "..")])
    path = out / "resume.svg"
    save(figure, path)
    return path


def ranks(out: Path) -> Path:
    """ranks.svg: 14 samples in batches of 2 on 2 ranks x 2 devices: `rank_share` and then
    `split` over the rank's devices are one interleaved split over all 4 devices; device k of
    rank r takes batch r + 2k of every round of 4."""
    s = scenario(read_json(LAYOUT), "ranks_2x2", ["2 ranks x 2 devices\n(rank_share, split)"])
    figure = figure_of(s, small=True, per_device=True)
    legend(figure, [("rank 0 cpu:0", DEVICE_COLORS[0], None),
                    ("rank 0 cpu:1", DEVICE_COLORS[1], None),
                    ("rank 1 cpu:0", DEVICE_COLORS[2], None),
                    ("rank 1 cpu:1", DEVICE_COLORS[3], None),
                    ("padding", "#eeeeee", "///")])
    path = out / "ranks.svg"
    save(figure, path)
    return path


"""Pictures of the three ways of batching sequences, drawn from stoke's own plans.

The data is book/results/sequence_plans.json, written by
`build/default/bench/sequence_pictures --real build/corpus/pydocs32 --json
book/results/sequence_plans.json` (scripts/sequence-bench runs it), on the real corpus of
scripts/make-corpus: a first-fit batch with its documents' pieces, every batch of a bucketed
epoch, and a mixture's counts at every 1% of an epoch.
"""
from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
from matplotlib.patches import Rectangle

from data import DataError, ROOT, field, read_json
from style import DEVICE_COLORS, PADDING_GREY, save

PLANS = ROOT / "book" / "results" / "sequence_plans.json"
"""stoke's plans on the real corpus (see the module's docstring)."""


def _plans() -> dict:
    return read_json(PLANS)


def _saved(figure, path: Path) -> Path:
    """Saves `figure` to `path` (see style.save) and returns the path."""
    save(figure, path)
    return path


def packed_batch(out: Path) -> Path:
    """A first-fit batch: one bar per row of S slots, each document's piece in its colour."""
    plans = _plans()
    packed = field(PLANS, plans, "packed")
    rows = field(PLANS, packed, "rows")
    width = int(field(PLANS, packed, "sequence_length"))
    documents = sorted({piece["document"] for row in rows for piece in row})
    colour = {d: DEVICE_COLORS[k % len(DEVICE_COLORS)] for k, d in enumerate(documents)}
    figure, axes = plt.subplots(figsize=(8, 0.45 * len(rows) + 0.8))
    for r, row in enumerate(rows):
        y = len(rows) - 1 - r
        at = 0
        for piece in row:
            size = piece["end"] - piece["begin"]
            if at + size > width:
                raise DataError(PLANS, f"row {r} holds more than its {width} slots")
            axes.add_patch(Rectangle((at, y), size, 0.8, facecolor=colour[piece["document"]],
                                     edgecolor="#333333", linewidth=0.6))
            if size >= width / 12:
                axes.text(at + size / 2, y + 0.4, f"doc {piece['document']}", ha="center",
                          va="center", fontsize=7)
            at += size
        if at < width:
            axes.add_patch(Rectangle((at, y), width - at, 0.8, facecolor=PADDING_GREY,
                                     edgecolor="#333333", linewidth=0.6, hatch="//"))
    axes.set_xlim(0, width)
    axes.set_ylim(-0.2, len(rows))
    axes.set_yticks([len(rows) - 1 - r + 0.4 for r in range(len(rows))],
                    [f"row {r}" for r in range(len(rows))])
    axes.set_xlabel("token slot (a piece's positions restart at 0; grey hatched: padding)")
    axes.set_title(f"A first-fit batch of {len(rows)} rows of {width} tokens "
                   f"(batch {packed.get('batch', '?')} of the first plan window), "
                   f"{len(documents)} documents")
    return _saved(figure, out / "sequences_packed.svg")


def bucketed_epoch(out: Path) -> Path:
    """Every batch of a bucketed epoch: rows x width, real tokens dark, padding light."""
    bucketed = field(PLANS, _plans(), "bucketed")
    batches = field(PLANS, bucketed, "batches")
    budget = int(field(PLANS, bucketed, "budget"))
    if not batches:
        raise DataError(PLANS, "the bucketed epoch has no batch")
    figure, axes = plt.subplots(figsize=(8, 3.2))
    for b, batch in enumerate(batches):
        width = int(batch["width"])
        tokens = batch["row_tokens"]
        slots = width * len(tokens)
        if slots > budget:
            raise DataError(PLANS, f"batch {b} has {slots} slots, over the budget {budget}")
        axes.bar(b, sum(tokens), color=DEVICE_COLORS[4], width=0.8)
        axes.bar(b, slots - sum(tokens), bottom=sum(tokens), color=PADDING_GREY, width=0.8)
        axes.text(b, slots, str(len(tokens)), ha="center", va="bottom", fontsize=6)
    axes.axhline(budget, color="#333333", linewidth=0.8, linestyle="--")
    axes.set_xlabel("batch of the epoch, in the order delivered (the number on top: its rows)")
    axes.set_ylabel("token slots")
    axes.set_title(f"A bucketed epoch: {len(batches)} batches under a budget of {budget} slots "
                   "(dashed); dark: tokens, light: padding")
    return _saved(figure, out / "sequences_bucketed.svg")


def mixture(out: Path) -> Path:
    """Each source's share of the picks so far, at every 1% of the epoch, and the weights."""
    mix = field(PLANS, _plans(), "mixture")
    counts = field(PLANS, mix, "counts")
    weights = [float(w) for w in field(PLANS, mix, "weights")]
    schedule = field(PLANS, mix, "schedule")
    picks = int(field(PLANS, mix, "picks"))
    if not counts:
        raise DataError(PLANS, "the mixture has no counts")
    figure, axes = plt.subplots(figsize=(8, 3.2))
    x = [100 * c["picks"] / picks for c in counts]
    for k in range(len(weights)):
        share = [c["consumed"][k] / c["picks"] for c in counts]
        axes.plot(x, share, color=DEVICE_COLORS[k], label=f"source {k}")
        axes.hlines(weights[k] / sum(weights), 0, 100, color=DEVICE_COLORS[k], linewidth=0.6,
                    linestyle=":")
    for phase in schedule:
        at = 100 * phase["from_pick"] / picks
        axes.axvline(at, color="#333333", linewidth=0.6, linestyle="--")
        axes.text(at, 0.02, " weights " + ":".join(str(w) for w in phase["weights"]),
                  fontsize=7, va="bottom")
    axes.text(0.5, 0.02, " weights " + ":".join(str(int(w)) for w in weights), fontsize=7,
              va="bottom")
    axes.set_xlim(0, 100)
    axes.set_ylim(0, 0.6)
    axes.set_xlabel("% of the epoch's picks")
    axes.set_ylabel("share of the picks so far")
    axes.set_title("A mixture of three sources by samples, with a schedule (dotted: the first "
                   "weights' shares)")
    axes.legend(loc="upper right", fontsize=7)
    return _saved(figure, out / "sequences_mixture.svg")

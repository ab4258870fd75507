"""The look shared by the book's pictures, and how they are saved."""
from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.axes import Axes  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402
from matplotlib.patches import Rectangle  # noqa: E402

# Okabe-Ito colours: told apart with every kind of colour vision.
DEVICE_COLORS = ["#56B4E9", "#E69F00", "#009E73", "#CC79A7", "#0072B2", "#D55E00"]
"""One colour per device (or per rank and device), in order."""
LIBRARY_COLORS = {
    "stoke": "#0072B2",
    "bound": "#999999",
    "PyTorch DataLoader": "#E69F00",
    "libtorch": "#D55E00",
    "DALI": "#009E73",
    "torchdata nodes": "#CC79A7",
    "SPDL": "#56B4E9",
}
"""One colour per loader in the benchmark pictures."""
WAIT_COLOR = "#D55E00"
"""Time a consumer spends waiting."""
WORK_COLOR = "#0072B2"
"""Time a consumer spends working."""
PADDING_GREY = "#DDDDDD"
"""Items that repeat other samples, and items no device reads."""

plt.rcParams.update(
    {
        "font.family": "DejaVu Sans",
        "font.size": 9,
        "axes.titlesize": 10,
        "axes.spines.top": False,
        "axes.spines.right": False,
        "svg.fonttype": "none",  # text stays text: small files, selectable labels
        "svg.hashsalt": "stoke",  # the same data gives the same file
        "figure.facecolor": "white",  # readable on the book's dark theme too
    }
)


PREVIEW_DIR: Path | None = None
"""Where `save` also writes a PNG of every picture, to look at it (scripts/figures --preview)."""


def save(figure: Figure, path: Path) -> None:
    """Writes `figure` as SVG to `path`, without a date, so rebuilding changes nothing."""
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, format="svg", bbox_inches="tight", metadata={"Date": None})
    if PREVIEW_DIR is not None:
        PREVIEW_DIR.mkdir(parents=True, exist_ok=True)
        figure.savefig(PREVIEW_DIR / path.with_suffix(".png").name, dpi=110, bbox_inches="tight")
    plt.close(figure)


def item_box(
    axes: Axes,
    x: float,
    y: float,
    text: str,
    color: str,
    hatch: str | None = None,
    width: float = 1.0,
    height: float = 0.8,
    text_color: str = "black",
) -> None:
    """One item of a batch: a box of `width` x `height` from (x, y) with `text` in its middle."""
    axes.add_patch(
        Rectangle(
            (x, y), width, height, facecolor=color, edgecolor="#333333", linewidth=0.8, hatch=hatch
        )
    )
    # On a hatched box the text gets a plain background, to stay legible.
    background = dict(facecolor=color, edgecolor="none", pad=1.5) if hatch else None
    axes.text(x + width / 2, y + height / 2, text, ha="center", va="center", color=text_color,
              bbox=background)


def blank_axes(axes: Axes) -> None:
    """Hides the frame and ticks of axes used as a drawing board."""
    axes.set_axis_off()

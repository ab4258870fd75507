"""The demo's loss and accuracy, epoch by epoch.

The data is book/results/demo_metrics.csv: the metrics CSV of one run of `./scripts/demo`
(an MLP on Fashion-MNIST on 2 CPU devices; the script writes build/demo/metrics.csv, copied
here; what the run printed is book/results/demo_output.txt).
"""
from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt

from data import ROOT, read_csv
from style import DEVICE_COLORS, save

METRICS = ROOT / "book" / "results" / "demo_metrics.csv"
"""The demo run's metrics (see the module's docstring)."""

COLUMNS = ["epoch", "train_loss", "train_accuracy", "valid_loss", "valid_accuracy"]
"""The columns the picture needs."""


def demo_metrics(out: Path) -> Path:
    """demo_metrics.svg: training and test loss and accuracy of the demo, per epoch."""
    rows = read_csv(METRICS, COLUMNS)
    epochs = [int(r["epoch"]) + 1 for r in rows]
    figure, (loss, accuracy) = plt.subplots(1, 2, figsize=(8.5, 3.3))
    for axes, what, label in ((loss, "loss", "cross-entropy loss"), (accuracy, "accuracy",
                                                                     "accuracy")):
        axes.plot(epochs, [r[f"train_{what}"] for r in rows], marker="o", markersize=4,
                  color=DEVICE_COLORS[4], label="training (2 devices, all-reduced)")
        axes.plot(epochs, [r[f"valid_{what}"] for r in rows], marker="s", markersize=4,
                  color=DEVICE_COLORS[5], label="test set")
        axes.set(xlabel="epoch", ylabel=label, title=what.capitalize())
        axes.set_xticks(epochs)
        axes.grid(alpha=0.3)
    final = rows[-1]["valid_accuracy"]
    accuracy.annotate(f"test accuracy {final:.4f}", (epochs[-1], final), textcoords="offset points",
                      xytext=(0, -22), ha="right", fontsize=8)
    loss.legend(fontsize=8, frameon=False)
    figure.suptitle("./scripts/demo: an MLP on Fashion-MNIST, 2 CPU devices x batch 64",
                    fontsize=10)
    figure.tight_layout()
    path = out / "demo_metrics.svg"
    save(figure, path)
    return path

#!/usr/bin/env python3
"""Plots the loss and accuracy curves of a stoke metrics CSV into a PNG.

Usage: plot_metrics.py METRICS_CSV OUTPUT_PNG
"""
import csv
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main() -> int:
    if len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    with open(sys.argv[1], newline="") as handle:
        rows = list(csv.DictReader(handle))
    if not rows:
        print(f"plot_metrics: {sys.argv[1]} has no epochs", file=sys.stderr)
        return 1
    epochs = [int(row["epoch"]) + 1 for row in rows]
    figure, (loss, accuracy) = plt.subplots(1, 2, figsize=(10, 4))
    loss.plot(epochs, [float(r["train_loss"]) for r in rows], marker="o", label="train")
    loss.plot(epochs, [float(r["valid_loss"]) for r in rows], marker="o", label="test")
    loss.set(xlabel="epoch", ylabel="cross-entropy loss", title="Loss")
    accuracy.plot(epochs, [float(r["train_accuracy"]) for r in rows], marker="o", label="train")
    accuracy.plot(epochs, [float(r["valid_accuracy"]) for r in rows], marker="o", label="test")
    accuracy.set(xlabel="epoch", ylabel="accuracy", title="Accuracy")
    for axes in (loss, accuracy):
        axes.grid(alpha=0.3)
        axes.legend()
    figure.tight_layout()
    figure.savefig(sys.argv[2], dpi=100)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Memory over time of a loader against its bound.

The data is book/results/memory_timeline.json, written by
`build/default/bench/loader_bench --peak-memory --memory-json book/results/memory_timeline.json`:
the growth of anonymous resident memory (RssAnon, sampled every 0.2 ms) while a loader with
2 workers and queue depth 4 delivers two epochs of the image workload (12 MiB batches).
"""
from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt

from data import ROOT, DataError, field, read_json
from style import LIBRARY_COLORS, WAIT_COLOR, WORK_COLOR, save

MEMORY = ROOT / "book" / "results" / "memory_timeline.json"
"""The recorded memory trace (see the module's docstring)."""


def memory_timeline(out: Path) -> Path:
    """memory_timeline.svg: anonymous memory growth over two epochs, against the bound
    `queue depth x batch bytes` and the bound with the benchmark's 64 MiB of slack."""
    data = read_json(MEMORY)
    samples = field(MEMORY, data, "samples_ms_mib")
    if not samples or any(len(s) != 2 for s in samples):
        raise DataError(MEMORY, "samples_ms_mib is not a list of [ms, MiB] pairs")
    bound = float(field(MEMORY, data, "bound_mib"))
    slack = float(field(MEMORY, data, "slack_mib"))
    figure, axes = plt.subplots(figsize=(8.0, 3.4))
    axes.step([s[0] for s in samples], [s[1] for s in samples], where="post", color=WORK_COLOR,
              linewidth=1.2, label="anonymous memory growth (RssAnon)")
    axes.axhline(bound, color=WAIT_COLOR, linestyle="--",
                 label=f"bound: queue depth {field(MEMORY, data, 'queue_depth')} x "
                       f"{field(MEMORY, data, 'batch_mib'):g} MiB = {bound:g} MiB")
    axes.axhline(bound + slack, color=LIBRARY_COLORS["bound"], linestyle=":",
                 label=f"the benchmark's limit: bound + {slack:g} MiB")
    for epoch, start in enumerate(field(MEMORY, data, "epoch_starts_ms")):
        axes.axvline(start, color="#bbbbbb", linewidth=0.8)
        axes.text(start + 5, bound + slack * 1.05, f"epoch {epoch}", fontsize=7.5,
                  color="#666666", va="bottom")
    end = float(field(MEMORY, data, "end_ms"))
    axes.axvline(end, color="#bbbbbb", linewidth=0.8)
    axes.text(end + 5, bound + slack * 1.05, "loader\ndropped", fontsize=7.5, color="#666666",
              va="bottom")
    axes.set_ylim(0, (bound + slack) * 1.3)
    axes.set(xlabel="ms since the loader was built", ylabel="MiB",
             title=f"Memory of a loader with {field(MEMORY, data, 'workers')} workers, "
                   f"batches of {field(MEMORY, data, 'batch_size')} images (two epochs)")
    axes.legend(fontsize=7.5, loc="center right", frameon=False)
    axes.grid(alpha=0.3)
    path = out / "memory_timeline.svg"
    save(figure, path)
    return path

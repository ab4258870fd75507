"""Draws every picture of the book into book/docs/figures/ from the recorded runs.

Usage: main.py [--out DIR] [--preview DIR] [NAME...]

Each picture is one function (listed in PICTURES) that reads its data file and writes one SVG.
A missing or malformed data file stops the run with a message naming the file; every picture
is tried, so one run names every file that is wrong.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Callable

import bench
import demo
import memory
import pipeline
import prefetch
import sequences
import split
import storage
import style
from data import ROOT, DataError, relative

PICTURES: dict[str, Callable[[Path], Path]] = {
    "split": split.split,
    "resume": split.resume,
    "ranks": split.ranks,
    "pipeline": pipeline.pipeline,
    "throughput": bench.throughput,
    "first_batch": bench.first_batch,
    "image_bench": bench.image_bench,
    "demo_metrics": demo.demo_metrics,
    "prefetch_timeline": prefetch.prefetch_timeline,
    "memory_timeline": memory.memory_timeline,
    "sequences_packed": sequences.packed_batch,
    "sequences_bucketed": sequences.bucketed_epoch,
    "sequences_mixture": sequences.mixture,
    "storage_timeline": storage.readahead_timeline,
}
"""Every picture, by name: the function that draws it into a folder and returns its path."""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "book" / "docs" / "figures",
                        help="folder for the SVG files (default: book/docs/figures)")
    parser.add_argument("--preview", type=Path, help="also write a PNG of each picture here")
    parser.add_argument("names", nargs="*", metavar="NAME",
                        help=f"pictures to draw (default: all): {', '.join(PICTURES)}")
    args = parser.parse_args()
    unknown = [name for name in args.names if name not in PICTURES]
    if unknown:
        parser.error(f"no picture named {', '.join(unknown)} (there are: {', '.join(PICTURES)})")
    style.PREVIEW_DIR = args.preview
    failed = 0
    for name in args.names or PICTURES:
        try:
            path = PICTURES[name](args.out)
        except DataError as error:
            print(f"figures: {name}: {error}", file=sys.stderr)
            failed += 1
            continue
        print(f"figures: {relative(path)}")
    if failed:
        print(f"figures: {failed} picture(s) not drawn", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

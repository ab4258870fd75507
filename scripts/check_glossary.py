#!/usr/bin/env python3
"""Fails where the code or the book still uses a word the glossary retired.

The book's glossary (book/docs/glossary.md) gives every word one idea. Each retired name
below used a word for a second idea; it has a replacement, and nothing may use the old name
again. Only source, CMake, scripts, the README and the book are read (not the glossary, not
this file, not results files).

Usage: scripts/check_glossary.py [ROOT]; prints FILE:LINE: NAME -> REPLACEMENT for each use
and the closing line "N passed, N failed" (one check a retired name).
"""
import pathlib
import re
import sys

# retired name (a regular expression) -> the glossary's word for it
RETIRED = {
    r"\bSplitPart\b": "SplitShare (a split's portion is a share)",
    r"\.part\(": ".share( (a split's portion is a share)",
    r"\brank_part\b": "rank_share (a split's portion is a share)",
    r"\bPrefetchingShardedDataset\b": "ReadAheadShardedDataset (prefetch is the device upload)",
    r"\bprefetch_shards\b": "read_ahead (prefetch is the device upload)",
    r"\bStepMaker\b": "BatchMaker (a step is a training update)",
    r"\bstruct Shard\b|\bstoke::Shard\b": "ParameterShard (a shard is a data file)",
    r"\bstoke::shard_of\b|\bShard shard_of\b": "parameter_shard (a shard is a data file)",
    r"NeverRunsMoreThanPrefetchBatchesAhead": "...QueueDepthBatchesAhead (the host window is the queue depth)",
    r"(?i)\blogical (cpu |vulkan )?devices?\b": "device, or lane (one of several on one GPU)",
    r"\bexact::lanes\b": "exact::width (a lane is a stoke device on a shared GPU)",
    r"\bhost_window\b": "queue_depth (the worker pool's bound is the queue depth)",
    r"(?i)\breorder window\b|bounded window": "queue depth (the worker pool's bound is the queue depth)",
    r"\bWorkerActivity::Stage\b": "Activity (a stage makes a batch's device form)",
    r"\bstage_name\b": "activity_name (a stage makes a batch's device form)",
    r"context\(\)\.stage\b|\.stage = \"": ".activity (DataErrorContext::stage is the old name of activity)",
    r"\bPixelWindow\b": "PixelRegion (a window is a run of consecutive samples)",
    r"\bWindowView\b": "RegionView (a window is a run of consecutive samples)",
    r"\bdecode_(jpeg_)?window\b": "decode_region, decode_jpeg_region (a window is a run of samples)",
    r"\b(resampled_window|window_column_margin)\b": "resampled_region, region_column_margin",
    r"(?i)\bwindow decod": "region decode (a window is a run of consecutive samples)",
    r"\bwindow_decode\b": "region_decode (window_decode is the option's old name)",
    r"\bread_ahead_window\b": "read_ahead_depth (a window is a run of consecutive samples)",
    r"\bimage_window_": "image_region_ (the results' keys of the region decode)",
}
# Files that still use a retired name, each with the pattern and why it waits.
PENDING: dict = {}
# Files that use a retired name on purpose, each with the pattern and why.
KEPT = {
    (r"\bwindow_decode\b", "modules/images/include/stoke/images/prepared_image.hpp"):
        "the option's old name, kept so that code written against it compiles",
    (r"\bwindow_decode\b", "python/src/stoke_loader/_images.py"):
        "the keyword's old name, kept so that code written against it runs",
    (r"\bwindow_decode\b", "tests/images/test_decode.cpp"):
        "tests that the option's old name still turns the region decode off",
    (r"\bwindow_decode\b", "tests/python/test_images.py"):
        "tests that the keyword's old name is still taken",
    (r"\bread_ahead_window\b", "modules/data/include/stoke/data/shard_cache.hpp"):
        "the function's old name, kept so that code written against it compiles",
    (r"\bread_ahead_window\b", "modules/stoke.cppm"):
        "the module exports the old name too",
    (r"\bread_ahead_window\b", "tests/data/test_shards.cpp"):
        "tests that the old name gives the read-ahead depth",
    (r"context\(\)\.stage\b|\.stage = \"", "tests/core/test_errors.cpp"):
        "tests that code written against the old name `stage` still names the activity",
}
SUFFIXES = {".hpp", ".cpp", ".cu", ".cuh", ".cppm", ".py", ".md", ".txt", ".cmake"}
SKIP = {"book/docs/glossary.md", "scripts/check_glossary.py"}


def main() -> int:
    root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else ".").resolve()
    files = [root / "README.md"] + [
        p for tree in ("modules", "backends", "learner", "examples", "tests", "bench", "book/docs",
                       "scripts", "cmake", "python")
        for p in (root / tree).rglob("*") if p.is_file() and p.suffix in SUFFIXES]
    hits = {pattern: [] for pattern in RETIRED}
    for path in sorted(files):
        rel = path.relative_to(root).as_posix()
        if rel in SKIP or "/results/" in rel:
            continue
        for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
            for pattern in RETIRED:
                if re.search(pattern, line) and (pattern, rel) not in PENDING | KEPT:
                    hits[pattern].append(f"{rel}:{number}")
    failed = 0
    for pattern, places in hits.items():
        if places:
            failed += 1
            for place in places:
                print(f"{place}: {pattern} -> {RETIRED[pattern]}")
    print(f"check_glossary: {sum(map(len, hits.values()))} use(s) of retired names")
    print(f"{len(RETIRED) - failed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

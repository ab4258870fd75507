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
}
# Files that still use a retired name, each with the pattern and why it waits.
PENDING = {
    (r"(?i)\breorder window\b|bounded window", "modules/data/include/stoke/data/detail/worker_pool.hpp"):
        "the pool's split by concern (#39) renames it there",
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
                if re.search(pattern, line) and (pattern, rel) not in PENDING:
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

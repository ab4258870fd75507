#!/usr/bin/env python3
"""Sums the CPU seconds that scripts/time_compile logged, by target, largest first.

Each line of the log is "<user s> <system s> <wall s> <output>" (one compile or link). A
compile counts for the target of its object file (CMakeFiles/<target>.dir), a link for the
target it makes.

Usage: compile_times.py <log> [how many targets to show, default 25]
"""
from __future__ import annotations

import re
import sys
from collections import defaultdict
from pathlib import Path


def target_of(output: str) -> str:
    """The CMake target an output belongs to: its CMakeFiles/<target>.dir, else (a link) the
    file's name without lib, .a or .so."""
    match = re.search(r"CMakeFiles/([^/]+)\.dir/", output)
    if match:
        return match.group(1)
    return re.sub(r"^lib(.+)\.(a|so)$", r"\1", Path(output).name)


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__, file=sys.stderr)
        return 2
    shown = int(argv[1]) if len(argv) > 1 else 25
    cpu: dict[str, float] = defaultdict(float)
    steps = 0
    for number, line in enumerate(Path(argv[0]).read_text().splitlines(), 1):
        fields = line.split(maxsplit=3)
        try:
            user, system = float(fields[0]), float(fields[1])
        except (ValueError, IndexError):
            continue  # /usr/bin/time's "Command exited with non-zero status" and the like
        if len(fields) < 4:
            print(f"compile_times: {argv[0]}:{number}: no output named", file=sys.stderr)
            return 1
        cpu[target_of(fields[3])] += user + system
        steps += 1
    total = sum(cpu.values())
    print(f"{total:.0f} CPU s in {steps} compiles and links, {len(cpu)} targets")
    for target, seconds in sorted(cpu.items(), key=lambda item: -item[1])[:shown]:
        print(f"{seconds:8.1f} s {100 * seconds / total:5.1f} %  {target}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

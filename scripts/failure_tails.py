#!/usr/bin/env python3
"""Prints the last lines of every failed test's output in ctest logs (used by scripts/test).

A CI log shows its head and its tail; the output of a test that failed in the middle of a long
run is cut away with the middle. scripts/test ends with this, so that the tail of the run names
each failed test together with the end of what it printed.

Usage: failure_tails.py [--lines N] <ctest log>...
"""
from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

# "12/97 Test #66: name ......***Exception: SegFault  0.01 sec" (also Passed, ***Failed,
# ***Timeout, ***Skipped, Not Run).
STATUS = re.compile(r"^\s*\d+/\d+ Test\s+#\d+: (\S+) \.*\s*(\*{0,3}[A-Za-z][A-Za-z: ]*?)\s+[\d.]+ sec")
START = re.compile(r"^\s*Start\s+\d+: ")
SUMMARY = re.compile(r"^\d+% tests passed")


def failed_outputs(log: str) -> list[tuple[str, str, list[str]]]:
    """(test, status, output lines) of every test of `log` that did not pass."""
    found: list[tuple[str, str, list[str]]] = []
    current: list[str] | None = None
    for line in log.splitlines():
        status = STATUS.match(line)
        if status or START.match(line) or SUMMARY.match(line):
            current = None
        if status and "Passed" not in status.group(2) and "Skipped" not in status.group(2):
            current = []
            found.append((status.group(1), status.group(2).strip("* "), current))
        elif current is not None:
            current.append(line)
    return found


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lines", type=int, default=25, help="lines of each output (25)")
    parser.add_argument("logs", nargs="+", type=Path)
    args = parser.parse_args(argv)
    for path in args.logs:
        if not path.is_file():
            continue
        for test, status, output in failed_outputs(path.read_text(errors="replace")):
            print(f"--- {path}: {test} ({status}), the last {args.lines} lines of its output:")
            print("\n".join(output[-args.lines:]) if output else "(it printed nothing)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

#!/usr/bin/env python3
"""Counts the tests of one ctest run, GoogleTest cases one by one (used by scripts/test).

CTest runs each GoogleTest executable as one test (cmake/StokeTesting.cmake), which writes
its cases to <results>/<test>.json (--gtest_output=json). This counts every case of those
files, each other CTest test as one, and a GoogleTest executable that CTest saw fail without a
failing case (a crash, a sanitizer report at exit, a timeout; no results file is written when
it dies before its end) as one failed test. Skipped cases and tests count as passed, as CTest
counts them.

Usage: count_tests.py <ctest log> <results folder>
Prints "P passed, F failed, S skipped: C GoogleTest cases in E executables, O other tests".
"""
from __future__ import annotations

import json
import re
import sys
from pathlib import Path


def ctest_summary(log: str) -> tuple[int, set[str]]:
    """The number of tests of the run and the names of those that failed, from ctest's log."""
    totals = re.findall(r"tests passed(?:, \d+ tests failed)? out of (\d+)", log)
    if not totals:
        raise ValueError("no 'tests passed ... out of N' line")
    failed = set()
    block = re.search(r"The following tests FAILED:\n((?:[ \t]+\d+ - .*\n?)*)", log)
    if block:
        # "<tab>  3 - name (Failed)", labels may follow.
        failed = set(re.findall(r"^[ \t]+\d+ - (.+?) \([^()]*\)", block.group(1), re.M))
    return int(totals[-1]), failed


def cases(path: Path) -> tuple[int, int, int]:
    """(run, failed, skipped) GoogleTest cases of one results file."""
    run = failed = skipped = 0
    for suite in json.loads(path.read_text()).get("testsuites", []):
        for case in suite.get("testsuite", []):
            if case.get("status") != "RUN":
                continue
            run += 1
            if case.get("failures"):
                failed += 1
            elif case.get("result") == "SKIPPED":
                skipped += 1
    return run, failed, skipped


def main(argv: list[str]) -> int:
    log, results = Path(argv[0]).read_text(errors="replace"), Path(argv[1])
    try:
        total, ctest_failed = ctest_summary(log)
    except ValueError as error:
        print(f"count_tests: {argv[0]}: {error}", file=sys.stderr)
        return 1
    passed = failed = skipped = executables = gtest_cases = 0
    counted = set()  # the tests whose cases were counted from their results file
    for path in sorted(results.glob("*.json")) if results.is_dir() else []:
        try:
            run, bad, skip = cases(path)
        except (ValueError, OSError) as error:
            print(f"count_tests: {path}: {error}", file=sys.stderr)
            continue
        counted.add(path.stem)
        executables += 1
        gtest_cases += run
        passed += run - bad
        failed += bad
        skipped += skip
        if path.stem in ctest_failed and bad == 0:
            failed += 1
    others = total - executables
    others_failed = len(ctest_failed - counted)
    passed += others - others_failed
    failed += others_failed
    skipped += len(re.findall(r"^[ \t]+\d+ - .+? \(Skipped\)", log, re.M))
    print(f"{passed} passed, {failed} failed, {skipped} skipped: {gtest_cases} GoogleTest cases "
          f"in {executables} executables, {others} other tests")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

#!/usr/bin/env python3
"""Runs the programs of tests/python/exit_programs.py many times each and counts how they
ended: a clean exit (status 0, no abort or traceback on standard error) or not.

The root cause of the abort at exit ("terminate called without an active exception": a loader's
worker thread took the GIL while the interpreter finalized) is run `--runs` times (200 by
default), every other program `--others` times. Prints one line a program and the closing line
"N passed, N failed" (a run a test); exits non-zero if any run did not end cleanly.

    scripts/exit-loop [--runs 200] [--others 20] [--python PYTHON]
"""
import argparse
import collections
import pathlib
import subprocess
import sys
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "tests" / "python"))
from exit_programs import PROGRAMS, ROOT_CAUSE  # noqa: E402


def ends_cleanly(python: str, program: str) -> tuple[bool, str]:
    """Whether one run of `program` ended cleanly, and how it ended otherwise."""
    try:
        run = subprocess.run([python, "-c", program], capture_output=True, text=True,
                             timeout=120)
    except subprocess.TimeoutExpired:
        return False, "hung (killed after 120 s)"
    if run.returncode == 0 and "terminate" not in run.stderr and "Traceback" not in run.stderr:
        return True, ""
    last = run.stderr.strip().splitlines()[-1:] or [""]
    return False, f"exit status {run.returncode}: {last[0]}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=200, help=f"runs of {ROOT_CAUSE}")
    parser.add_argument("--others", type=int, default=20, help="runs of every other program")
    parser.add_argument("--python", default=sys.executable, help="a Python with stoke_loader")
    args = parser.parse_args()
    passed = failed = 0
    for name in sorted(PROGRAMS):
        runs = args.runs if name == ROOT_CAUSE else args.others
        endings: collections.Counter = collections.Counter()
        start = time.perf_counter()
        for _ in range(runs):
            clean, how = ends_cleanly(args.python, PROGRAMS[name])
            passed, failed = passed + clean, failed + (not clean)
            if not clean:
                endings[how] += 1
        bad = sum(endings.values())
        print(f"{name}: {runs - bad} of {runs} runs ended cleanly "
              f"({time.perf_counter() - start:.1f} s)", flush=True)
        for how, count in endings.most_common():
            print(f"  {count} x {how}")
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

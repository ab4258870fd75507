"""The section "From Python" of bench/RESULTS.md, made from book/results/python_bench.txt.

`scripts/python-bench` writes book/results/python_bench.txt and then runs
`results_section.py --write bench/RESULTS.md book/results/python_bench.txt`, which puts the
section (the run's date, load and machine line, its table of figures and its ratios) between
the markers below, in place of the last one, or before the plot if there is none.
bench/peers/report.py, which rewrites bench/RESULTS.md on each `scripts/bench` run, calls
`section()` so that the section survives that run. Only stoke_loader's rows go in: the peers'
configurations of the Python run stay in the results file (their names would repeat rows of
RESULTS.md's own table of peer configurations).
"""

from __future__ import annotations

import argparse
import os
import re

BEGIN, END = "<!-- python-bench -->", "<!-- /python-bench -->"
SOURCE = "book/results/python_bench.txt"


def _table_after(lines: list[str], heading: str) -> list[str]:
    """The Markdown table that follows the line `## heading` (empty if none)."""
    rows, seen = [], False
    for line in lines:
        if re.fullmatch(r"#+\s+" + re.escape(heading) + r"\s*", line):
            seen = True
            continue
        if seen and line.lstrip().startswith("|"):
            rows.append(line)
        elif seen and rows:
            break
    return rows


def section(path: str) -> str:
    """The section's Markdown (markers included), or "" when `path` does not exist."""
    if not os.path.exists(path):
        return ""
    lines = open(path).read().split("\n")
    command = next((line[2:] for line in lines if line.startswith("$ ")), "scripts/python-bench")
    when = next((line[2:] for line in lines if line.startswith("# ") and "load average" in line),
                "")
    end = next((line[2:] for line in lines if line.startswith("# load average at the end")), "")
    notes = [line[2:] for line in lines
             if line.startswith("# ") and line[2:] not in (when, end)
             and not line.startswith("# load average at the end")]
    figures = [line.replace("| workload |", "| workload (from Python) |", 1)
               for line in _table_after(lines, "Figures")]
    ratios = _table_after(lines, "Ratios")
    out = [BEGIN, "## From Python", "",
           f"Written by `{command}` into `{SOURCE}` ({when}; {end}). stoke's Python package "
           "(`stoke_loader`) on the workloads above, with stoke from C++ and the Python peers "
           "in the same run; the book's chapter \"From Python\" says what each row runs.", ""]
    out += [f"- {note}" for note in notes] + ([""] if notes else [])
    out += ["### Python: figures", ""] + figures + [""]
    out += ["### Python: ratios", ""] + ratios + [""]
    out += ["A ratio above 1 favours stoke_loader: the C++ loader's (or the peer's) time over "
            "stoke_loader's, or stoke_loader's rate over theirs. Each configuration's figures, "
            f"the peers' included, are in `{SOURCE}`.", END]
    return "\n".join(out)


def write(markdown: str, path: str) -> None:
    """Puts the section of `path` into the file `markdown` (bench/RESULTS.md)."""
    text = open(markdown).read()
    new = section(path)
    if not new:
        raise SystemExit(f"results_section: {path} does not exist")
    if BEGIN in text and END in text:
        before, rest = text.split(BEGIN, 1)
        after = rest.split(END, 1)[1]
        text = before + new + after
    elif "![image throughput" in text:
        at = text.index("![image throughput")
        text = text[:at] + new + "\n\n" + text[at:]
    else:
        text = text.rstrip("\n") + "\n\n" + new + "\n"
    with open(markdown, "w") as f:
        f.write(text)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--write", nargs=2, metavar=("RESULTS_MD", "PYTHON_BENCH_TXT"),
                        required=True)
    args = parser.parse_args()
    write(*args.write)


if __name__ == "__main__":
    main()

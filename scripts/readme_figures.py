#!/usr/bin/env python3
"""Keeps the figures of README.md equal to the results files they come from.

GitHub shows README.md as it is, so its figures cannot be filled in at build time as the
book's are. Each is written as a placeholder comment followed by its value:

    <!-- figure("book/results/image_bench.txt", "ratio image_stoke_best_over_dali") -->3.30<!-- /figure -->

The placeholder is the book's (`book/hooks/figures.py`: the same files, rows, fields and
formatting). `--check` (the default) fails, naming the line, when a value is not what its
placeholder gives now or when the README states a figure by hand outside a placeholder;
`--write` rewrites every value from the results files.

Usage: readme_figures.py [--check | --write] [README]
"""
from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SPAN = re.compile(r"<!--\s*(figure\(.*?\))\s*-->(.*?)<!--\s*/figure\s*-->", re.DOTALL)


def load_hook():
    """The book's figures hook, loaded from its file."""
    spec = importlib.util.spec_from_file_location("figures", ROOT / "book/hooks/figures.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def problems_and_text(text: str, hook) -> tuple[list[str], str]:
    """The README's problems (line: message) and its text with every value rewritten."""
    problems = []
    pieces = []
    end = 0
    for match in SPAN.finditer(text):
        line = text.count("\n", 0, match.start()) + 1
        try:
            name, args, kwargs = hook._parse_call(match.group(1))
            value = hook.figure(ROOT, *args, **kwargs)
        except (hook.FigureError, TypeError) as error:
            problems.append(f"{line}: {match.group(1)}: {error}")
            continue
        if match.group(2) != value:
            problems.append(f"{line}: {match.group(1)} gives {value}, the README says "
                            f"'{match.group(2)}' (run scripts/readme_figures.py --write)")
        pieces += [text[end:match.start(2)], value]
        end = match.end(2)
    pieces.append(text[end:])
    outside = SPAN.sub(lambda m: " " * len(m.group(0)), text)
    for line, figure in hook.hand_typed_figures(outside):
        problems.append(f"{line}: '{figure}' is typed by hand: write it as a placeholder")
    return problems, "".join(pieces)


def main(argv: list[str]) -> int:
    write = "--write" in argv
    paths = [arg for arg in argv if not arg.startswith("--")]
    readme = Path(paths[0]) if paths else ROOT / "README.md"
    hook = load_hook()
    problems, text = problems_and_text(readme.read_text(), hook)
    if write:
        readme.write_text(text)
        problems = [p for p in problems if "gives" not in p]
    for problem in problems:
        print(f"{readme.name}:{problem}", file=sys.stderr)
    if problems:
        return 1
    print(f"{readme.name}: every figure equals its results file")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

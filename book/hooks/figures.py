"""MkDocs hook: every measured figure in the book comes from a results file.

It runs on each page's Markdown before conversion (``on_page_markdown``) and fails the build,
naming the page, the line and what is wrong, in two cases: a placeholder that names a file,
row or field that does not exist, and a figure typed by hand in the page's prose.

Placeholders
------------

``{{ figure("FILE", "ROW") }}`` and ``{{ figure("FILE", "ROW", "FIELD", digits=N, scale=S) }}``
become one number of FILE, a path relative to the repository root. ROW picks one line of the
file and FIELD one number on it:

- In a Markdown table (a line starting with ``|``), ROW is the text of the row's first cell
  (backticks left out) and FIELD the header of a column, by default the second one.
  ``figure("bench/RESULTS.md", "image_vs_pytorch_w2")`` is that ratio's value;
  ``figure("bench/RESULTS.md", "overhead, ns per item, 2 workers", "PyTorch DataLoader")``
  is a figure of the table of figures. The value is the cell's first number.
- Any other line is picked by how it begins: ROW, then ``:``, a space or the line's end.
  FIELD is a pattern in which ``{}`` stands for the number, searched in the rest of the line;
  by default the first number after ROW. So ``figure("book/results/shard_bench.txt",
  "ratio shard_split_bytes_per_epoch")`` reads a ``ratio <name>: <x>`` line, and
  ``figure("book/results/image_bench.txt", "stoke, tar shards, 2 threads", "first batch {} ms")``
  one column of a text table.
- In a ``.json`` file, ROW is a path of keys and list positions joined by dots
  (``"scenarios.0.samples"``), and FIELD is not used.

Exactly one line may match. The number is written as the file writes it or, with ``digits``,
rounded to that many decimals, with thousands separators; ``scale`` multiplies it first
(``scale=1000`` turns seconds into milliseconds). The page writes the unit after the
placeholder (``{{ figure(...) }} ms``). Placeholders in code and inline code are left as written.

``{{ table("FILE", "HEADING") }}``, alone on a line, becomes the first Markdown table after the
heading whose text is HEADING, e.g. ``table("bench/RESULTS.md", "Ratios")``.

Figures typed by hand
---------------------

In prose, that is outside fenced code blocks, inline code, ``--8<--`` lines, HTML comments,
link targets and placeholders, a number followed by a unit of measurement (see ``UNITS``:
``x`` or ``times`` as a ratio, ``%``, units of time, of bytes and of frequency, and rates such
as ``samples/s``) fails the build. A constant of the design, which no run measures (a queue
depth, a limit, an allowance in a bound), may be written as inline code, or listed in the
page's front matter with the reason it is not a measurement::

    ---
    constants:
      64 MiB: shard_bench's allowance above the cache's bound, a parameter of the program
    ---

A listed constant must appear in the page's prose, written as listed; one that does not fails
the build, so the list cannot outlive the text.
"""

from __future__ import annotations

import ast
import json
import logging
import re
from pathlib import Path

from mkdocs.exceptions import PluginError

# A number as prose writes it (42, 2,209.9, 0.044, 1e-6), and as results files do (also -3).
UNSIGNED = r"(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?:[eE][-+]?\d+)?"
NUMBER = r"-?" + UNSIGNED

# Units that make a number a measured figure. Rates (any word per second) come first, so that
# "MB/s" is not read as "MB".
UNITS = (
    r"[A-Za-z]+/s",
    r"[KkMGT]i?B",
    r"[nuµμm]s",
    r"s|secs?|seconds?|minutes?|mins?",
    r"nanoseconds?|microseconds?|milliseconds?",
    r"[MG]Hz",
    r"times",
    r"[x×](?!\s*\d)",
    r"%",
)

# A number followed by a unit; the number does not continue a word, a version or a power
# ("v2", "1.5", "2^28"), and the unit ends where a word would.
HAND_TYPED = re.compile(
    r"(?<![\w.^/\-])(" + UNSIGNED + r")\s?(?:" + "|".join(UNITS) + r")(?![\w/])"
)

PLACEHOLDER = re.compile(r"\{\{\s*(.*?)\s*\}\}")
FENCE = re.compile(r"^\s*(`{3,}|~{3,})")
INLINE_CODE = re.compile(r"(?<!`)(`+)(?!`)(.+?)(?<!`)\1(?!`)", re.DOTALL)
HTML_COMMENT = re.compile(r"<!--.*?-->", re.DOTALL)
LINK_TARGET = re.compile(r"\]\([^)\s]*\)|<https?://[^>]*>")

# Problems are logged as they are found, and the build fails after the last page.
log = logging.getLogger("mkdocs.hooks.figures")


class FigureError(Exception):
    """A placeholder that cannot be resolved: the message says which file, row or field."""


def _blank(match: re.Match) -> str:
    """The matched text with every character but line breaks turned into a space."""
    return re.sub(r"[^\n]", " ", match.group(0))


def prose_view(markdown: str) -> str:
    """`markdown` with code blocks, ``--8<--`` lines, inline code and HTML comments blanked.

    Blanking keeps every character's offset and line, so positions found in the view are
    positions in `markdown`.
    """
    lines = markdown.split("\n")
    fence = None
    for i, line in enumerate(lines):
        opening = FENCE.match(line)
        if fence is None and opening:
            fence = opening.group(1)
        elif fence is not None:
            closing = re.match(r"^\s*(`{3,}|~{3,})\s*$", line)
            if closing and closing.group(1)[0] == fence[0] and len(closing.group(1)) >= len(fence):
                fence = None
                lines[i] = " " * len(line)
                continue
        if fence is not None or "--8<--" in line:
            lines[i] = " " * len(line)
    view = "\n".join(lines)
    view = HTML_COMMENT.sub(_blank, view)
    return INLINE_CODE.sub(_blank, view)


def hand_typed_figures(markdown: str) -> list[tuple[int, str]]:
    """Every figure typed by hand in `markdown`'s prose, as (line number from 1, figure)."""
    view = LINK_TARGET.sub(_blank, PLACEHOLDER.sub(_blank, prose_view(markdown)))
    found = []
    for number, line in enumerate(view.split("\n"), start=1):
        for match in HAND_TYPED.finditer(line):
            found.append((number, " ".join(match.group(0).split())))
    return found


def _parse_call(text: str) -> tuple[str, list, dict]:
    """The name, arguments and keyword arguments of a placeholder's call, all literals."""
    try:
        call = ast.parse(text, mode="eval").body
        if not isinstance(call, ast.Call) or not isinstance(call.func, ast.Name):
            raise ValueError
        args = [ast.literal_eval(arg) for arg in call.args]
        kwargs = {kw.arg: ast.literal_eval(kw.value) for kw in call.keywords}
    except (SyntaxError, ValueError):
        raise FigureError("is not a call like figure(\"FILE\", \"ROW\")") from None
    return call.func.id, args, kwargs


def _cells(line: str) -> list[str]:
    """The cells of a Markdown table row, trimmed, backticks left out."""
    return [cell.strip().replace("`", "") for cell in line.strip().strip("|").split("|")]


def _first_number(text: str) -> str | None:
    """The first number in `text` that does not continue a word, or None."""
    match = re.search(r"(?<![\w.])" + NUMBER, text)
    return match.group(0) if match else None


def _table_value(lines: list[str], row: str, field: str | None) -> list[tuple[int, str | None]]:
    """(line number, value) of each table row of `lines` whose first cell is `row`."""
    found = []
    header = None
    for number, line in enumerate(lines, start=1):
        if not line.lstrip().startswith("|"):
            header = None
            continue
        cells = _cells(line)
        if header is None:
            header = cells
            continue
        if cells[0] != row:
            continue
        column = 1 if field is None else (header.index(field) if field in header else None)
        if column is None:
            raise FigureError(f"the table of row '{row}' (line {number}) has no column '{field}'")
        found.append((number, _first_number(cells[column]) if column < len(cells) else None))
    return found


def _line_value(lines: list[str], row: str, field: str | None) -> list[tuple[int, str | None]]:
    """(line number, value) of each line of `lines` that begins with `row` and has `field`."""
    if field is not None and field.count("{}") != 1:
        raise FigureError(f"field '{field}' must hold one {{}} where the number stands")
    pattern = "{}" if field is None else field
    before, after = (re.escape(part) for part in pattern.split("{}"))
    number = re.compile(before + r"(?<![\w.])(" + NUMBER + r")" + after)
    found = []
    for index, line in enumerate(lines, start=1):
        text = line.strip()
        if not text.startswith(row) or not re.match(r"(:|\s|$)", text[len(row) :]):
            continue
        match = number.search(text[len(row) :])
        if match:
            found.append((index, match.group(1)))
    return found


def _json_value(path: Path, row: str) -> str:
    """The number at dotted path `row` of the JSON file `path`."""
    value = json.loads(path.read_text())
    for key in row.split("."):
        try:
            value = value[int(key)] if isinstance(value, list) else value[key]
        except (KeyError, IndexError, ValueError, TypeError):
            raise FigureError(f"{path.name} has no '{row}' (no '{key}')") from None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise FigureError(f"'{row}' in {path.name} is not a number")
    return json.dumps(value)


def _format(text: str, digits: int | None, scale: float | None) -> str:
    """`text` as the file wrote it, or scaled and rounded as asked."""
    if digits is None and scale is None:
        return text
    value = float(text.replace(",", "")) * (1.0 if scale is None else scale)
    return f"{value:,.{digits}f}" if digits is not None else f"{value:,.12g}"


def figure(root: Path, file: str, row: str, field: str | None = None, *,
           digits: int | None = None, scale: float | None = None) -> str:
    """The number that `file` (relative to `root`) holds at `row` and `field`, formatted."""
    path = root / file
    if not path.is_file():
        raise FigureError(f"results file '{file}' does not exist")
    if path.suffix == ".json":
        return _format(_json_value(path, row), digits, scale)
    lines = path.read_text().split("\n")
    found = _table_value(lines, row, field) or _line_value(lines, row, field)
    what = f"row '{row}'" + ("" if field is None else f", field '{field}'")
    if not found:
        raise FigureError(f"{file} has no {what}")
    found = [(number, value) for number, value in found if value is not None]
    if not found:
        raise FigureError(f"{file} has no number at {what}")
    if len(found) > 1:
        numbers = ", ".join(str(number) for number, _ in found)
        raise FigureError(f"{file} has {what} on {len(found)} lines ({numbers}): make it unique")
    return _format(found[0][1], digits, scale)


def table(root: Path, file: str, heading: str) -> str:
    """The first Markdown table after the heading `heading` in `file` (relative to `root`)."""
    path = root / file
    if not path.is_file():
        raise FigureError(f"results file '{file}' does not exist")
    lines = path.read_text().split("\n")
    title = re.compile(r"#+\s+" + re.escape(heading) + r"\s*")
    starts = [i for i, line in enumerate(lines) if title.fullmatch(line)]
    if not starts:
        raise FigureError(f"{file} has no heading '{heading}'")
    rows = []
    for line in lines[starts[0] + 1 :]:
        if line.lstrip().startswith("|"):
            rows.append(line)
        elif rows:
            break
    if not rows:
        raise FigureError(f"{file} has no table after the heading '{heading}'")
    return "\n".join(rows)


def resolve(markdown: str, root: Path) -> tuple[str, list[tuple[int, str]]]:
    """`markdown` with its placeholders replaced, and (line, message) of each that failed."""
    view = prose_view(markdown)
    problems = []
    pieces = []
    end = 0
    for match in PLACEHOLDER.finditer(view):
        line = view.count("\n", 0, match.start()) + 1
        text = markdown[match.start() : match.end()]
        try:
            name, args, kwargs = _parse_call(match.group(1))
            if name not in ("figure", "table"):
                raise FigureError(f"'{name}' is neither figure nor table")
            value = (figure if name == "figure" else table)(root, *args, **kwargs)
        except (FigureError, TypeError) as error:
            problems.append((line, f"{text}: {error}"))
            continue
        pieces += [markdown[end : match.start()], value]
        end = match.end()
    pieces.append(markdown[end:])
    return "".join(pieces), problems


def check_constants(markdown: str, constants: object) -> tuple[list[tuple[int, str]], list[str]]:
    """The page's hand-typed figures not listed in `constants`, and the problems of the list.

    `constants` is the front matter's ``constants``: a mapping of figure to reason, or None.
    """
    constants = {} if constants is None else constants
    if not isinstance(constants, dict):
        return hand_typed_figures(markdown), ["'constants' must map each figure to its reason"]
    problems = [f"constant '{name}' needs a reason" for name, why in constants.items() if not why]
    listed = {" ".join(str(name).split()) for name in constants}
    found = hand_typed_figures(markdown)
    used = {text for _, text in found}
    problems += [
        f"constant '{name}' is listed but not in the prose" for name in sorted(listed - used)
    ]
    return [(line, text) for line, text in found if text not in listed], problems


def _front_matter_lines(path: Path, markdown: str) -> int:
    """How many lines of the page's file come before `markdown` (its front matter)."""
    try:
        raw = path.read_text()
    except OSError:
        return 0
    body = markdown.lstrip("\n")
    at = raw.find(body) if body.strip() else -1
    if at <= 0:
        return 0
    return raw.count("\n", 0, at) - (len(markdown) - len(body))


def page_problems(markdown: str, meta: dict, root: Path, name: str, offset: int = 0):
    """The page's Markdown with its placeholders resolved, and a message for each problem.

    `meta` is the page's front matter, `name` its path as messages show it, and `offset` the
    number of lines of front matter, so that line numbers are those of the page's file.
    """
    unlisted, list_problems = check_constants(markdown, meta.get("constants"))
    markdown, problems = resolve(markdown, root)
    messages = [f"{name}: {problem}" for problem in list_problems]
    messages += [f"{name}:{line + offset}: {text}" for line, text in problems]
    messages += [
        f"{name}:{line + offset}: '{text}' is a figure typed by hand" for line, text in unlisted
    ]
    return markdown, messages


# The messages of this build's problems, for on_post_build.
_problems: list[str] = []


def on_pre_build(config):
    """MkDocs hook: forgets the problems of an earlier build (``mkdocs serve``)."""
    _problems.clear()


def on_page_markdown(markdown, page, config, files):
    """MkDocs hook: resolves the page's placeholders and logs each problem as an error."""
    root = Path(config["config_file_path"]).resolve().parent.parent
    source = Path(page.file.abs_src_path)
    name = source.relative_to(root) if source.is_relative_to(root) else source
    offset = _front_matter_lines(source, markdown)
    markdown, messages = page_problems(markdown, page.meta, root, str(name), offset)
    for message in messages:
        log.error(message)
    _problems.extend(messages)
    return markdown


def on_post_build(config):
    """MkDocs hook: fails the build when any page had a problem."""
    if _problems:
        raise PluginError(
            f"figures: {len(_problems)} problem(s) above. Take each figure from a results file "
            "with {{ figure(...) }}, write a constant of the design as inline code or list it "
            "under 'constants' in the page's front matter (see book/hooks/figures.py)")

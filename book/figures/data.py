"""Reads the recorded runs in book/results/ and bench/RESULTS.md for the book's pictures.

Every reader raises `DataError` naming the file when it is missing or does not hold what the
picture needs, so a picture is never drawn from half a file.
"""
from __future__ import annotations

import csv
import json
import re
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
"""The repository root."""


class DataError(Exception):
    """A data file is missing or malformed; the message names the file and what is wrong."""

    def __init__(self, path: Path, why: str) -> None:
        super().__init__(f"{relative(path)}: {why}")


def relative(path: Path) -> str:
    """`path` relative to the repository root when it lies inside it."""
    try:
        return str(path.resolve().relative_to(ROOT))
    except ValueError:
        return str(path)


def read_text(path: Path) -> str:
    """The text of `path`; a missing file is a `DataError`."""
    try:
        return path.read_text(encoding="utf-8")
    except OSError as error:
        raise DataError(path, f"cannot read it ({error.strerror})") from None


def read_json(path: Path) -> Any:
    """The parsed JSON of `path`."""
    try:
        return json.loads(read_text(path))
    except json.JSONDecodeError as error:
        raise DataError(path, f"not valid JSON: {error}") from None


def field(path: Path, value: Any, *keys: str | int) -> Any:
    """`value[k1][k2]...`; a missing key or index is a `DataError` naming the whole chain."""
    for depth, key in enumerate(keys):
        try:
            value = value[key]
        except (KeyError, IndexError, TypeError):
            chain = "".join(f"[{k!r}]" for k in keys[: depth + 1])
            raise DataError(path, f"has no {chain}") from None
    return value


def read_csv(path: Path, columns: list[str]) -> list[dict[str, float]]:
    """The rows of a CSV file as numbers, for `columns`; at least one row is required."""
    rows = list(csv.DictReader(read_text(path).splitlines()))
    if not rows:
        raise DataError(path, "has no rows")
    missing = [c for c in columns if c not in rows[0]]
    if missing:
        raise DataError(path, f"lacks the column(s) {', '.join(missing)}")
    try:
        return [{c: float(row[c]) for c in columns} for row in rows]
    except (TypeError, ValueError):
        raise DataError(path, "has a value that is not a number") from None


def markdown_table(path: Path, heading: str) -> dict[str, list[str]]:
    """The first table after the line `heading` of a markdown file: first cell -> other cells."""
    lines = read_text(path).splitlines()
    try:
        start = lines.index(heading)
    except ValueError:
        raise DataError(path, f"has no heading {heading!r}") from None
    table: dict[str, list[str]] = {}
    for line in lines[start + 1 :]:
        if not line.startswith("|"):
            if table:
                break
            continue
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if set(cells[0]) <= set("-: "):  # the separator row
            continue
        table[cells[0]] = cells[1:]
    if not table:
        raise DataError(path, f"has no table after {heading!r}")
    return table


def number(path: Path, text: str) -> float | None:
    """The leading number of a table cell (`234,188`, `84.1 (...)`); None for `-`."""
    if text.strip() == "-":
        return None
    match = re.match(r"\s*([\d,]+(?:\.\d+)?)", text)
    if not match:
        raise DataError(path, f"has {text!r} where a number belongs")
    return float(match.group(1).replace(",", ""))


def cell(path: Path, table: dict[str, list[str]], row: str, column: int) -> float | None:
    """The number in `column` (0: the first after the row's name) of the row named `row`."""
    if row not in table:
        raise DataError(path, f"has no row {row!r}")
    cells = table[row]
    if column >= len(cells):
        raise DataError(path, f"row {row!r} has no column {column + 1}")
    return number(path, cells[column])

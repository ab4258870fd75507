#!/usr/bin/env python3
"""Checks the book's tables of one batch's way against the code (issues 28 and 39).

Each table between `<!-- batch-way:start -->` (or `<!-- batch-way:start NAME -->`, a second
table such as the device road's) and `<!-- batch-way:end -->` in
book/docs/training-on-several-devices.md lists, row by row, a function, the header it is in
(as included: `data/detail/worker_pool.hpp` is `<stoke/data/detail/worker_pool.hpp>`), the row
that calls it (`#k`, or `—` where a thread's chain begins), the call as written in the caller,
and the hop (`call`, `thread`, `virtual` with the base that declares it, or `template` with the
concept the callee models). For every row this checks, in the headers as they are now:

1. the header exists, and the function is defined in it (in the named class, nested classes
   included);
2. the calling row's function has the call in its body (in one of its overloads; comments
   ignored, whitespace ignored, `...` in the call standing for any text), and the call names
   the function (its name, or the operator's symbol);
3. a `virtual` hop's callee overrides (`override` or `final`), and the base it names declares
   that function `virtual` in the header it names;
4. a caller comes before its callees in the table;
5. the sentence above the table says as many calls, files and virtual hops as the table has
   ("N calls over M files ..., K of them virtual").

Usage: scripts/batch_way.py [book page]   (exit 0: the table holds; 1: it says where not)
"""
from __future__ import annotations

import re
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BOOK = ROOT / "book/docs/training-on-several-devices.md"
START, END = "<!-- batch-way:start -->", "<!-- batch-way:end -->"
# A table: `<!-- batch-way:start -->` (the host's way) or `<!-- batch-way:start NAME -->`.
TABLE = re.compile(r"<!-- batch-way:start(?: ([\w-]+))? -->(.*?)<!-- batch-way:end -->", re.DOTALL)


@dataclass
class Row:
    number: int
    function: str  # Class::Nested::name, or name
    header: str  # include path below stoke/
    caller: int | None
    call: str
    hop: str  # call, thread, virtual, template
    base: tuple[str, str] | None  # virtual: (class, header)


def code_spans(cell: str) -> list[str]:
    return re.findall(r"`([^`]+)`", cell)


def parse_tables(text: str) -> list[tuple[str, list[Row], str]]:
    """Every table of the page: its name (`host`, or the word after `batch-way:start`), its
    rows, and the page's text from the end of the table before it to its last row."""
    tables, previous_end = [], 0
    for m in TABLE.finditer(text):
        rows, _ = parse_table(START + m.group(2) + END)
        tables.append((m.group(1) or "host", rows, text[previous_end : m.end(2)]))
        previous_end = m.end()
    if not tables:
        raise SystemExit(f"batch-way: the page has no {START} ... {END} table")
    return tables


def parse_table(text: str) -> tuple[list[Row], str]:
    """The table's rows and the text of the page before the table's first row."""
    if START not in text or END not in text:
        raise SystemExit(f"batch-way: the page has no {START} ... {END} table")
    before, rest = text.split(START, 1)
    table = rest.split(END, 1)[0]
    rows: list[Row] = []
    for line in table.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) < 6 or not cells[0].isdigit():
            continue  # the header or the separator line
        number, function, header, caller, call, hop = cells[:6]
        kind = hop.split()[0].strip(":,`") if hop else ""
        spans = code_spans(hop)
        base = (spans[0], spans[1]) if kind == "virtual" and len(spans) >= 2 else None
        rows.append(
            Row(
                number=int(number),
                function=code_spans(function)[0] if code_spans(function) else function,
                header=code_spans(header)[0] if code_spans(header) else header,
                caller=int(caller.lstrip("#")) if caller.lstrip("#").isdigit() else None,
                call=code_spans(call)[0] if code_spans(call) else "",
                hop=kind,
                base=base,
            )
        )
    return rows, before + table


def resolve(header: str) -> Path | None:
    """The file `<stoke/header>` names (modules/*, backends/*, learner/, ...)."""
    found = [
        p
        for pattern in ("*/include/stoke/", "*/*/include/stoke/", "*/*/*/include/stoke/")
        for p in ROOT.glob(pattern + header)
        if not p.relative_to(ROOT).parts[0] in ("build", "book", "site")
    ]
    return found[0] if len(found) == 1 else None


def strip_comments(source: str) -> str:
    """`source` with comments, string and character literals blanked (offsets kept)."""
    out = list(source)
    i, n = 0, len(source)
    while i < n:
        c = source[i]
        if source.startswith("//", i):
            j = source.find("\n", i)
            j = n if j < 0 else j
        elif source.startswith("/*", i):
            j = source.find("*/", i + 2)
            j = n if j < 0 else j + 2
        elif c in "\"'":
            j = i + 1
            while j < n and source[j] != c:
                j += 2 if source[j] == "\\" else 1
            j += 1
            for k in range(i + 1, min(j - 1, n)):
                if out[k] != "\n":
                    out[k] = " "
            i = j
            continue
        else:
            i += 1
            continue
        for k in range(i, j):
            if out[k] != "\n":
                out[k] = " "
        i = j
    return "".join(out)


def matching(text: str, i: int) -> int:
    """The index after the bracket that closes the one at `i`."""
    pairs = {"(": ")", "{": "}", "[": "]"}
    stack = []
    for j in range(i, len(text)):
        c = text[j]
        if c in pairs:
            stack.append(pairs[c])
        elif c in ")}]":
            if not stack or stack.pop() != c:
                return -1
            if not stack:
                return j + 1
    return -1


def class_body(text: str, name: str) -> tuple[int, int] | None:
    """The span of the body of class or struct `name` in `text` (its first definition)."""
    for m in re.finditer(r"\b(?:class|struct)\s+" + re.escape(name) + r"\b", text):
        j = m.end()
        while j < len(text) and text[j] not in "{;()":
            j += 1
        if j < len(text) and text[j] == "{":
            end = matching(text, j)
            if end > 0:
                return j + 1, end - 1
    return None


def body_start(text: str, j: int) -> tuple[int, str] | None:
    """After a parameter list ending at `j`: the index of the `{` of a function body, with
    the text between (qualifiers, a constructor's initializers); None if not a definition."""
    k, depth = j, 0
    while k < len(text):
        c = text[k]
        if c in "([":
            depth += 1
        elif c in ")]":
            depth -= 1
            if depth < 0:
                return None
        elif depth == 0 and c in ";,=":
            return None
        elif depth == 0 and c == ":" and text[k : k + 2] != "::" and text[k - 1] != ":":
            # a constructor's initializers: name(...) or name{...}, separated by commas
            k += 1
            while True:
                m = re.compile(r"\s*[\w:<>]+\s*").match(text, k)
                if not m or m.end() >= len(text) or text[m.end()] not in "({":
                    return None
                k = matching(text, m.end())
                if k < 0:
                    return None
                m = re.compile(r"\s*").match(text, k)
                k = m.end()
                if text[k] == ",":
                    k += 1
                    continue
                return (k, text[j:k]) if text[k] == "{" else None
        elif depth == 0 and c == "{":
            return k, text[j:k]
        k += 1
    return None


def class_span(text: str, qualified: str) -> tuple[int, int] | None:
    """The span of the body of `Class::Nested` (or of the whole text for "")."""
    lo, hi = 0, len(text)
    for cls in filter(None, qualified.split("::")):
        span = class_body(text[lo:hi], cls)
        if span is None:
            return None
        lo, hi = lo + span[0], lo + span[1]
    return lo, hi


def definitions(text: str, function: str) -> list[tuple[str, str]]:
    """The body of every definition of `function` (`Class::Nested::name` or `name`: its
    overloads) in `text`, each with its qualifiers."""
    qualified, _, name = function.rpartition("::")
    span = class_span(text, qualified)
    if span is None:
        return []
    scope, found_all = text[span[0] : span[1]], []
    for m in re.finditer(r"(?<![\w~])" + re.escape(name) + r"\s*\(", scope):
        found = body_start(scope, matching(scope, m.end() - 1))
        if found is not None:
            start, qualifiers = found
            end = matching(scope, start)
            if end > 0:
                head = scope[scope.rfind("\n", 0, m.start()) + 1 : m.start()]
                found_all.append((scope[start:end], head + qualifiers))
    return found_all


def definition(text: str, function: str) -> tuple[str, str] | None:
    """The body of the first definition of `function` in `text`, and its qualifiers."""
    found = definitions(text, function)
    return found[0] if found else None


def squeeze(s: str) -> str:
    return re.sub(r"\s+", "", s)


def holds_call(body: str, call: str) -> bool:
    """Whether `body` holds `call` (spacing aside); `...` in the call stands for any text, so a
    long call can be written `post(...)`."""
    at = 0
    for part in squeeze(call).split("..."):
        at = squeeze(body).find(part, at)
        if at < 0:
            return False
        at += len(part)
    return True


def names_callee(call: str, function: str) -> bool:
    name = function.split("::")[-1]
    if name == "operator()":  # a call operator: `f(...)`, or `std::invoke(f, ...)`
        return "(" in call
    if name.startswith("operator"):
        return name[len("operator") :] in call
    return re.search(r"(?<!\w)" + re.escape(name) + r"\b", call) is not None


def check(page: Path) -> list[str]:
    """What every table of `page` says that the code does not (prefixed by the table's name
    where the page has several)."""
    tables = parse_tables(page.read_text())
    errors: list[str] = []
    for table, rows, text_before in tables:
        found = check_table(page, table, rows, text_before)
        errors += [f"{table}: {e}" if len(tables) > 1 else e for e in found]
    return errors


def check_table(page: Path, table: str, rows: list[Row], text_before: str) -> list[str]:
    """What one table says that the code does not."""
    if not rows:
        return [f"{page}: the batch-way table has no rows"]
    errors: list[str] = []
    by_number = {row.number: row for row in rows}
    sources: dict[str, str | None] = {}

    def source(header: str) -> str | None:
        if header not in sources:
            path = resolve(header)
            sources[header] = strip_comments(path.read_text()) if path else None
        return sources[header]

    for row in rows:
        where = f"row {row.number} (`{row.function}`)"
        text = source(row.header)
        if text is None:
            errors.append(f"{where}: no header <stoke/{row.header}> (or more than one)")
            continue
        found = definition(text, row.function)
        if found is None:
            errors.append(f"{where}: not defined in <stoke/{row.header}>")
            continue
        _, qualifiers = found
        if row.caller is None:
            continue
        caller = by_number.get(row.caller)
        if caller is None:
            errors.append(f"{where}: its caller, row {row.caller}, is not in the table")
            continue
        if caller.number >= row.number:
            errors.append(f"{where}: its caller, row {row.caller}, comes after it")
        if not row.call or not names_callee(row.call, row.function):
            errors.append(f"{where}: the call `{row.call}` does not name it")
        caller_text = source(caller.header)
        bodies = definitions(caller_text, caller.function) if caller_text else []
        if bodies and not any(holds_call(body, row.call) for body, _ in bodies):
            errors.append(f"{where}: `{caller.function}` does not call `{row.call}`")
        if row.hop == "virtual":
            if not re.search(r"\b(override|final)\b", qualifiers):
                errors.append(f"{where}: a virtual hop, but it does not override")
            if row.base is None:
                errors.append(f"{where}: a virtual hop names no base and its header")
            else:
                base_text = source(row.base[1])
                name = row.function.split("::")[-1]
                span = class_span(base_text, row.base[0]) if base_text else None
                if span is None or not re.search(
                    r"\bvirtual\b[^;{]*\b" + re.escape(name) + r"\s*\(",
                    base_text[span[0] : span[1]],
                ):
                    errors.append(
                        f"{where}: `{row.base[0]}` in <stoke/{row.base[1]}> declares no "
                        f"virtual `{name}`"
                    )
        elif row.hop not in ("call", "thread", "template"):
            errors.append(f"{where}: unknown hop `{row.hop}`")

    calls = [row for row in rows if row.caller is not None]
    files = {row.header for row in rows} | {row.base[1] for row in rows if row.base}
    virtual = sum(row.hop == "virtual" for row in rows)
    claim = re.search(
        r"(\d+) calls over (\d+) files.*?(\d+) of them virtual", text_before, re.DOTALL
    )
    if claim is None:
        errors.append("the text above the table says no 'N calls over M files ..., K of them "
                      "virtual'")
    elif tuple(map(int, claim.groups())) != (len(calls), len(files), virtual):
        errors.append(
            f"the text says {claim.group(1)} calls over {claim.group(2)} files, "
            f"{claim.group(3)} of them virtual; the table has {len(calls)} calls over "
            f"{len(files)} files, {virtual} of them virtual"
        )
    if not errors:
        print(
            f"batch-way: the book's table ({table}) holds: {len(rows)} functions, {len(calls)} "
            f"calls over {len(files)} files, {virtual} of them virtual ({page.relative_to(ROOT)})"
        )
    return errors


def main() -> int:
    page = Path(sys.argv[1]).resolve() if len(sys.argv) > 1 else BOOK
    errors = check(page)
    for error in errors:
        print(f"batch-way: {error}", file=sys.stderr)
    if errors:
        print(
            f"batch-way: {page} disagrees with the code; fix the table of "
            "\"One batch's way\" (or the code)",
            file=sys.stderr,
        )
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())

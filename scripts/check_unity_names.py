#!/usr/bin/env python3
"""Fails where two files of one unity-built test executable define the same file-local name.

A unity build (STOKE_UNITY_TESTS) compiles the sources of a test executable as one translation
unit, so their anonymous namespaces are one namespace. Two definitions of one name are then a
compile error at best; at worst two functions of one name but other parameters become
overloads, and a call in one file silently picks the other file's function (a brace-initialised
argument converts to either). This check refuses both: every name that a file defines at file
scope (a function, variable, class, enum or alias, at the start of a line) must be defined in
one file of its executable only. A using-declaration (`using ns::name;`) and an alias whose
line is the same in every file (`using X = Y;`, the same type) may repeat.

Usage: scripts/check_unity_names.py TARGET=FILE,FILE... ...; prints each clash as
"TARGET: NAME in FILE and FILE" and exits 1 if there is one.
"""
import collections
import pathlib
import re
import sys

# Lines that define nothing at file scope, or only what may be repeated.
SKIPPED_PREFIXES = ("#", "namespace", "}", "using namespace", "template", "//", "/*", " ", "\t")
MACROS = {"TEST", "TEST_F", "TEST_P", "TYPED_TEST", "TYPED_TEST_P", "TYPED_TEST_SUITE",
          "TYPED_TEST_SUITE_P", "REGISTER_TYPED_TEST_SUITE_P", "INSTANTIATE_TEST_SUITE_P",
          "INSTANTIATE_TYPED_TEST_SUITE_P", "static_assert", "main"}
TYPE = re.compile(r'(?:struct|class|enum class|enum|union)\s+(\w+)')
ALIAS = re.compile(r'using\s+(\w+)\s*=')
USING_DECLARATION = re.compile(r'using\s+[\w:]+::\w+;')
# The declarator's name: the last identifier before the first '(', '=', '{' or '['.
DEFINED = re.compile(r'[^=({\[]*?\b(\w+)\s*[({=\[]')


def file_scope_names(path: pathlib.Path) -> dict[str, str]:
    """The names `path` defines at file scope, each with the line that defines it."""
    names: dict[str, str] = {}
    for line in path.read_text().splitlines():
        if not line or line.startswith(SKIPPED_PREFIXES) or USING_DECLARATION.match(line):
            continue
        match = TYPE.match(line) or ALIAS.match(line) or DEFINED.match(line)
        if match and match.group(1) not in MACROS:
            names.setdefault(match.group(1), line.strip())
    return names


def main() -> int:
    clashes = 0
    for argument in sys.argv[1:]:
        target, _, files = argument.partition("=")
        seen: dict[str, list[tuple[str, str]]] = collections.defaultdict(list)
        for file in files.split(","):
            path = pathlib.Path(file)
            for name, line in file_scope_names(path).items():
                seen[name].append((path.name, line))
        for name, places in sorted(seen.items()):
            files_of_name = sorted({file for file, _ in places})
            same_alias = ALIAS.match(places[0][1]) and len({line for _, line in places}) == 1
            if len(files_of_name) > 1 and not same_alias:
                print(f"{target}: {name} in {' and '.join(files_of_name)}")
                clashes += 1
    print(f"{len(sys.argv) - 1} unity-built executables, {clashes} file-local names defined twice")
    return 1 if clashes else 0


if __name__ == "__main__":
    sys.exit(main())

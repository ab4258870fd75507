#!/usr/bin/env python3
"""Fails on an include that runs the wrong way (./scripts/test runs it as one test).

stoke's arrows point downward only: the backends and the learner may include the modules,
never the other way round, and no area reaches into another area's `detail/`.

1. A header under modules/ includes no backend (<stoke/cpu|cuda|vulkan/...>) and nothing of
   the learner (<stoke/learner/...>). The umbrella header <stoke/stoke.hpp> is the one
   exception: it is `stoke::stoke`, the core with the CPU backend, by design.
2. No file includes another area's detail header (<stoke/AREA/detail/...> from outside
   AREA): an area's detail/ is its own. The areas are the folders that hold the headers:
   modules/core, data, dist, images; backends/cpu, cuda, vulkan; learner.

Usage: scripts/check_layering.py [ROOT]; prints every wrong-way include as FILE:LINE and the
rule, and the closing line "N passed, N failed" (one check a rule).
"""
import pathlib
import re
import sys

INCLUDE = re.compile(r'^\s*#\s*include\s*<stoke/([a-z_]+)/(detail/)?[^>]*>')
BACKENDS = {"cpu", "cuda", "vulkan"}
UMBRELLA = "modules/include/stoke/stoke.hpp"


def area_of(path: pathlib.Path, root: pathlib.Path) -> str | None:
    """The area a source file belongs to: the folder under include/stoke/, or the tree."""
    rel = path.relative_to(root).as_posix()
    match = re.search(r'include/stoke/([a-z_]+)/', rel)
    if match:
        return match.group(1)
    for prefix, area in (("backends/cuda/", "cuda"), ("backends/vulkan/", "vulkan"),
                         ("backends/cpu/", "cpu"), ("learner/", "learner")):
        if rel.startswith(prefix):
            return area
    return None


def main() -> int:
    root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else ".").resolve()
    sources = [p for tree in ("modules", "backends", "learner", "examples", "tests", "bench")
               for p in (root / tree).rglob("*")
               if p.suffix in {".hpp", ".cpp", ".cu", ".cuh", ".cppm"} and p.is_file()]
    upward, detail = [], []
    for path in sorted(sources):
        rel = path.relative_to(root).as_posix()
        own = area_of(path, root)
        for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
            match = INCLUDE.match(line)
            if not match:
                continue
            area, is_detail = match.group(1), bool(match.group(2))
            if rel.startswith("modules/") and rel != UMBRELLA and rel != "modules/stoke.cppm" \
                    and (area in BACKENDS or area == "learner"):
                upward.append(f"{rel}:{number}: modules/ includes <stoke/{area}/...>")
            if is_detail and own is not None and area != own:
                detail.append(f"{rel}:{number}: the {own} area includes {area}'s detail/")
    for finding in upward + detail:
        print(finding)
    failed = int(bool(upward)) + int(bool(detail))
    print(f"check_layering: {len(upward)} upward include(s), {len(detail)} include(s) of "
          f"another area's detail/")
    print(f"{2 - failed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

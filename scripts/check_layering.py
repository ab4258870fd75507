#!/usr/bin/env python3
"""Fails on an include that runs the wrong way (./scripts/test runs it as one test).

stoke's arrows point downward only. From the bottom: the modules (what loading data needs),
the learner's kernel contract (learner/kernels/, which the CUDA and Vulkan backends
implement), the backends, the learner; beside the learner, the adapters (adapters/: stoke's
batches as another framework's types, stoke::libtorch), which only users include. No area
reaches into another area's `detail/`.

1. A header under modules/ includes no backend (<stoke/cpu|cuda|vulkan/...>) and nothing of
   the learner (<stoke/learner/...>, its kernels included). The umbrella header
   <stoke/stoke.hpp> is the one exception: it is `stoke::stoke`, the core with the CPU
   backend, by design (and modules/stoke.cppm, the named module, wraps the learner too).
2. The learner (learner/include/) includes no backend: it reaches a backend through its
   concepts (`Backend`, `StagingBackend`, `DeviceBackend`), never one backend's headers.
3. The learner's kernel contract (learner/kernels/) includes no backend and no other learner
   header: it sits below the backends.
4. A backend (backends/) includes of the learner only its kernel contract
   (<stoke/learner/kernels/...>).
5. No file includes another area's detail header (<stoke/AREA/detail/...> from outside
   AREA): an area's detail/ is its own. The areas are the folders that hold the headers:
   modules/core, data, dist, images; backends/cpu, cuda, vulkan; learner; adapters/libtorch.
6. No library (modules/, learner/, backends/) includes an adapter (<stoke/libtorch/...>): an
   adapter is for users (examples, tests, their programs), and it may include any of them.

Every source folder is read: modules/, backends/, learner/, adapters/, examples/, tests/,
bench/, python/
(examples, tests, benchmarks and the Python package are users: only rule 5 binds them, and only
where they sit in an area). Before reading the tree the check plants each kind of wrong-way
include in a scratch tree and fails unless every one is found there, and nothing in a tree
whose includes all run downward: a rule that stopped matching would otherwise pass forever.

Usage: scripts/check_layering.py [ROOT]; prints every wrong-way include as FILE:LINE and the
rule, and the closing line "N passed, N failed" (one check a rule, and one for the self-test).
"""
import pathlib
import re
import sys
import tempfile

INCLUDE = re.compile(r'^\s*#\s*include\s*<stoke/([a-z_]+)/((?:detail|kernels)/)?[^>]*>')
BACKENDS = {"cpu", "cuda", "vulkan"}
ADAPTERS = {"libtorch"}
LIBRARIES = ("modules/", "learner/", "backends/")
UMBRELLAS = {"modules/include/stoke/stoke.hpp", "modules/stoke.cppm"}
TREES = ("modules", "backends", "learner", "adapters", "examples", "tests", "bench", "python")
SUFFIXES = {".hpp", ".cpp", ".cu", ".cuh", ".cppm", ".h"}
RULES = {
    "upward": "modules/ includes <stoke/{area}/...>",
    "learner": "the learner includes <stoke/{area}/...> (reach a backend through its concepts)",
    "kernels": "the learner's kernel contract includes <stoke/{area}/...> (it sits below them)",
    "backend": "a backend includes <stoke/learner/...> beyond <stoke/learner/kernels/...>",
    "detail": "the {own} area includes {area}'s detail/",
    "adapter": "a library includes the adapter <stoke/{area}/...> (adapters are for users)",
}

# The self-test: a file, a line, and the rule it must break (None: it breaks none).
PLANTED = (
    ("modules/data/include/stoke/data/x.hpp", "#include <stoke/cuda/backend.hpp>", "upward"),
    ("modules/core/include/stoke/core/x.hpp", "#include <stoke/learner/kernels/x.hpp>", "upward"),
    ("learner/include/stoke/learner/model/x.hpp", "#include <stoke/cpu/classification.hpp>",
     "learner"),
    ("learner/kernels/include/stoke/learner/kernels/x.hpp", "#include <stoke/learner/learner.hpp>",
     "kernels"),
    ("learner/kernels/include/stoke/learner/kernels/y.hpp", "#include <stoke/vulkan/device.hpp>",
     "kernels"),
    ("backends/vulkan/include/stoke/vulkan/x.hpp", "#include <stoke/learner/device_backend.hpp>",
     "backend"),
    ("backends/cuda/src/x.cu", "#include <stoke/learner/learner.hpp>", "backend"),
    ("backends/cpu/include/stoke/cpu/x.hpp", "#include <stoke/data/detail/order.hpp>", "detail"),
    ("modules/include/stoke/stoke.hpp", "#include <stoke/cpu/backend.hpp>", None),
    ("learner/include/stoke/learner/x.hpp", "#include <stoke/learner/kernels/x.hpp>", None),
    ("backends/cuda/include/stoke/cuda/x.hpp", "#include <stoke/learner/kernels/x.hpp>", None),
    ("tests/learner/x.cpp", "#include <stoke/cuda/backend.hpp>", None),
    ("backends/cuda/include/stoke/cuda/y.hpp", "#include <stoke/libtorch/tensors.hpp>", "adapter"),
    ("modules/data/include/stoke/data/y.hpp", "#include <stoke/libtorch/tensors.hpp>", "adapter"),
    ("learner/include/stoke/learner/y.hpp", "#include <stoke/libtorch/tensors.hpp>", "adapter"),
    ("adapters/libtorch/include/stoke/libtorch/x.hpp", "#include <stoke/cuda/batcher.hpp>", None),
    ("adapters/libtorch/include/stoke/libtorch/y.hpp", "#include <stoke/data/detail/order.hpp>",
     "detail"),
    ("tests/libtorch/x.cpp", "#include <stoke/libtorch/tensors.hpp>", None),
)


def area_of(rel: str) -> str | None:
    """The area a source file belongs to: the folder under include/stoke/, or the tree."""
    match = re.search(r'include/stoke/([a-z_]+)/', rel)
    if match:
        return match.group(1)
    for prefix, area in (("backends/cuda/", "cuda"), ("backends/vulkan/", "vulkan"),
                         ("backends/cpu/", "cpu"), ("learner/", "learner")):
        if rel.startswith(prefix):
            return area
    return None


def broken_rules(rel: str, line: str) -> list[str]:
    """The rules an include line of the file `rel` breaks (empty: none, or not an include)."""
    match = INCLUDE.match(line)
    if not match:
        return []
    area, sub = match.group(1), match.group(2)
    own, broken = area_of(rel), []
    if rel.startswith("modules/") and rel not in UMBRELLAS and (area in BACKENDS or
                                                                area == "learner"):
        broken.append("upward")
    if rel.startswith("learner/kernels/"):
        if area in BACKENDS or (area == "learner" and sub != "kernels/"):
            broken.append("kernels")
    elif rel.startswith("learner/") and area in BACKENDS:
        broken.append("learner")
    if rel.startswith("backends/") and area == "learner" and sub != "kernels/":
        broken.append("backend")
    if sub == "detail/" and own is not None and area != own:
        broken.append("detail")
    if rel.startswith(LIBRARIES) and area in ADAPTERS:
        broken.append("adapter")
    return broken


def findings(root: pathlib.Path) -> dict[str, list[str]]:
    """Every wrong-way include under `root`, as "FILE:LINE: why", by rule."""
    found = {rule: [] for rule in RULES}
    sources = [p for tree in TREES for p in (root / tree).rglob("*")
               if p.suffix in SUFFIXES and p.is_file()]
    for path in sorted(sources):
        rel = path.relative_to(root).as_posix()
        for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
            for rule in broken_rules(rel, line):
                area = INCLUDE.match(line).group(1)
                why = RULES[rule].format(area=area, own=area_of(rel))
                found[rule].append(f"{rel}:{number}: {why}")
    return found


def self_test() -> list[str]:
    """What the planted tree shows wrongly: a planted include missed or a clean one flagged."""
    wrong = []
    with tempfile.TemporaryDirectory() as scratch:
        root = pathlib.Path(scratch)
        for rel, line, _ in PLANTED:
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            (root / rel).write_text(f"#pragma once\n{line}\n")
        found = findings(root)
        for rel, line, rule in PLANTED:
            hits = {r for r, places in found.items() for p in places if p.startswith(rel + ":")}
            if hits != ({rule} if rule else set()):
                wrong.append(f"self-test: {rel}: `{line}` should break {rule or 'no rule'}, "
                             f"broke {sorted(hits) or 'none'}")
    return wrong


def main() -> int:
    root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else ".").resolve()
    wrong = self_test()
    found = findings(root)
    for line in wrong + [place for places in found.values() for place in places]:
        print(line)
    failed = sum(1 for places in found.values() if places) + int(bool(wrong))
    counts = ", ".join(f"{len(places)} {rule}" for rule, places in found.items())
    print(f"check_layering: wrong-way includes by rule: {counts}; self-test: "
          f"{len(PLANTED) - len(wrong)} of {len(PLANTED)} planted includes judged right")
    print(f"{len(RULES) + 1 - failed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env bash
# Builds the stoke_loader package as a user gets it: its sdist (build/python-sdist; it carries
# the stoke headers the native module includes: pyproject.toml's sdist.force-include), then a
# wheel from that sdist alone (build/python-wheel), installs the wheel into .tools/venv and runs
# its pytest suite (tests/python), whose test_install.py also installs the wheel into a new
# virtual environment outside the repository and runs a program there. Arguments go to pytest
# (for example: -k resume -x).
#
#   python/test.sh --torch-examples   installs the same wheel into .tools/torch-venv (torch;
#                                     STOKE_TORCH=1 ./scripts/setup makes it, or the Python
#                                     that STOKE_TORCH_PYTHON names) and runs the PyTorch
#                                     examples' tests with it (tests/python/test_torch_examples.py)
#   python/test.sh --build-only       builds the sdist and the wheel only
#
# The wheel is compiled once per sdist and Python: the sha256 of the sdist (reproducible: the
# same sources give the same bytes) and the Python's tag are kept beside the wheel, and a run
# that finds them unchanged installs the wheel already built (./scripts/test builds it with
# --build-only beside the default preset's tests, then runs this twice). A changed sdist is
# unpacked over the last one (build/python-sdist-tree) and built in a kept build directory
# (build/python/sdist-<tag>), so that only what changed is compiled again.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck source=SCRIPTDIR/../scripts/env.sh
source "$root/scripts/env.sh"
python="$root/.tools/venv/bin/python"
for module in nanobind scikit_build_core pytest numpy; do
  "$python" -c "import $module" 2>/dev/null || {
    echo "python/test.sh: $module is missing from .tools/venv; run ./scripts/setup" >&2
    exit 1
  }
done
log="$(mktemp)"
sdists="$root/build/python-sdist"   # the sdist
tree="$root/build/python-sdist-tree"  # the sdist unpacked, the wheel's source tree
wheels="$root/build/python-wheel"   # the wheel, and the sdist.sha256 it was built from
trap 'rm -f "$log"' EXIT
# fail WHAT: shows the build's output and stops.
fail() {
  cat "$log" >&2
  echo "python/test.sh: $1 failed" >&2
  exit 1
}

# The sdist, by scikit-build-core itself (PEP 517's build_sdist, run in python/): a second.
rm -rf "$sdists"
(cd "$root/python" && "$python" -c 'import sys
from scikit_build_core.build import build_sdist
build_sdist(sys.argv[1])' "$sdists") >"$log" 2>&1 || fail "building the sdist"
sdist=("$sdists"/stoke_loader-*.tar.gz)
stamp="$(sha256sum "${sdist[0]}" | cut -d' ' -f1) $("$python" -c 'import sys
print(sys.implementation.cache_tag)')"

if [[ "$(cat "$wheels/sdist.sha256" 2>/dev/null)" != "$stamp" ]] ||
  ! compgen -G "$wheels/stoke_loader-*.whl" >/dev/null; then
  # The sdist unpacked into $tree, writing only the files whose bytes changed (and removing
  # those it no longer has): the build directory, kept, then recompiles only what changed.
  "$python" - "${sdist[0]}" "$tree" <<'PY' || fail "unpacking the sdist"
import pathlib, sys, tarfile
tree, kept = pathlib.Path(sys.argv[2]), set()
with tarfile.open(sys.argv[1]) as sdist:
    for member in sdist.getmembers():
        parts = pathlib.PurePosixPath(member.name).parts[1:]  # less stoke_loader-<version>/
        if not member.isfile() or not parts or ".." in parts:
            continue
        path, data = tree.joinpath(*parts), sdist.extractfile(member).read()
        kept.add(path)
        if not path.is_file() or path.read_bytes() != data:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
for path in [p for p in tree.rglob("*") if p.is_file() and p not in kept]:
    path.unlink()
PY
  # The wheel, from that tree: CMake sees only what the sdist carries (its stoke/ headers; the
  # tree is no repository). No build isolation: the build tools come from .tools/venv
  # (scripts/setup), not the network. --no-cache-dir: nothing of it goes into pip's cache (pip
  # keys a wheel it caches by the path it was built from, which stays the same).
  rm -rf "$wheels"
  nice "$python" -m pip wheel --no-build-isolation --no-deps --no-cache-dir -w "$wheels" \
    --config-settings=build-dir="$root/build/python/sdist-{wheel_tag}" "$tree" >"$log" 2>&1 ||
    fail "building stoke_loader from its sdist"
  echo "$stamp" >"$wheels/sdist.sha256"
fi
wheel=("$wheels"/stoke_loader-*.whl)
[[ "${1:-}" == "--build-only" ]] && exit 0
cd "$root"
if [[ "${1:-}" == "--torch-examples" ]]; then
  shift
  python="${STOKE_TORCH_PYTHON:-$root/.tools/torch-venv/bin/python}"
  if ! "$python" -c 'import torch, pytest, numpy' 2>/dev/null; then
    echo "python/test.sh: no torch (with pytest and numpy) in $python: the PyTorch examples" \
      "are not run (STOKE_TORCH=1 ./scripts/setup installs it into .tools/torch-venv)"
    exit 0
  fi
  "$python" -m pip install --quiet --no-deps --force-reinstall "${wheel[0]}"
  exec "$python" -m pytest -q -rs -p no:cacheprovider "$@" tests/python/test_torch_examples.py
fi
"$python" -m pip install --quiet --no-deps --force-reinstall "${wheel[0]}"
# tests/python/test_install.py installs this wheel into a new virtual environment.
STOKE_LOADER_WHEEL="${wheel[0]}" exec "$python" -m pytest -q -p no:cacheprovider "$@" \
  tests/python

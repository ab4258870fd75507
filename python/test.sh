#!/usr/bin/env bash
# Builds the stoke_loader package from this repository into a wheel (build/python-wheel; the
# build directory build/python/ is kept, so a second run recompiles only what changed),
# installs it into .tools/venv and runs its pytest suite (tests/python). Arguments go to
# pytest (for example: -k resume -x).
#
#   python/test.sh --torch-examples   installs the same wheel into .tools/torch-venv (torch;
#                                     STOKE_TORCH=1 ./scripts/setup makes it, or the Python
#                                     that STOKE_TORCH_PYTHON names) and runs the PyTorch
#                                     examples' tests with it (tests/python/test_torch_examples.py)
#   python/test.sh --build-only       builds the wheel only
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck source=../scripts/env.sh
source "$root/scripts/env.sh"
python="$root/.tools/venv/bin/python"
for module in nanobind scikit_build_core pytest numpy; do
  "$python" -c "import $module" 2>/dev/null || {
    echo "python/test.sh: $module is missing from .tools/venv; run ./scripts/setup" >&2
    exit 1
  }
done
log="$(mktemp)"
wheels="$root/build/python-wheel"
trap 'rm -f "$log"' EXIT
# No build isolation: the build tools come from .tools/venv (scripts/setup), not the network.
rm -rf "$wheels"
if ! nice "$python" -m pip wheel --no-build-isolation --no-deps -w "$wheels" "$root/python" \
  >"$log" 2>&1; then
  cat "$log" >&2
  echo "python/test.sh: building stoke_loader failed" >&2
  exit 1
fi
wheel=("$wheels"/stoke_loader-*.whl)
# --build-only: the wheel alone (./scripts/test builds it beside the default preset's tests;
# the build tree, build/python/, makes the next build incremental).
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
exec "$python" -m pytest -q -p no:cacheprovider "$@" tests/python

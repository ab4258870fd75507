#!/usr/bin/env bash
# Builds the stoke_loader package from this repository, installs it into .tools/venv and runs
# its pytest suite (tests/python). The build directory (build/python/) is kept, so a second run
# recompiles only what changed. Arguments go to pytest (for example: -k resume -x).
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
trap 'rm -f "$log"' EXIT
# No build isolation: the build tools come from .tools/venv (scripts/setup), not the network.
if ! nice "$python" -m pip install --no-build-isolation --no-deps "$root/python" >"$log" 2>&1; then
  cat "$log" >&2
  echo "python/test.sh: building stoke_loader failed" >&2
  exit 1
fi
cd "$root"
exec "$python" -m pytest -q -p no:cacheprovider "$@" tests/python

#!/usr/bin/env bash
# Makes the venv of the sequence peers (bench/sequences/peers.py) and installs into it what is
# missing: megatron-core, grain, torchtune, litdata and tensorflow-cpu, from PyPI. torch is not
# downloaded again: a .pth file puts the site-packages of .tools/torch-venv (the project's torch)
# after the venv's own, so pip sees torch as installed and the venv's packages come first.
# torchao is pinned to 0.15.0: torchtune 0.6.1 imports torchao.dtypes.nf4tensor, which later
# torchao releases dropped, and 0.12 does not import under the torch of .tools/torch-venv.
# A peer that cannot be installed is reported and skipped (peers.py says why it has no figures).
#
#   bench/sequences/setup_peers.sh [VENV]   (default /work/venvs/seqbench, or $STOKE_SEQ_VENV)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
venv="${1:-${STOKE_SEQ_VENV:-/work/venvs/seqbench}}"
torch_site=$(echo "$root"/.tools/torch-venv/lib/python3*/site-packages)
if [[ ! -x $venv/bin/python ]]; then
  /usr/bin/python3 -m venv "$venv"
fi
site=$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
if [[ -d $torch_site ]]; then
  echo "$torch_site" >"$site/stoke_torch_venv.pth"
fi
has() { "$venv/bin/python" -c "import importlib.util, sys; sys.exit(importlib.util.find_spec('$1') is None)" 2>/dev/null; }
if ! has torch; then
  echo "setup_peers: no torch in $torch_site: installing CPU torch from PyPI" >&2
  "$venv/bin/pip" install --quiet torch --index-url https://download.pytorch.org/whl/cpu
fi
for package in numpy:numpy megatron-core:megatron.core grain:grain torchtune:torchtune \
    torchao==0.15.0:torchao.dtypes.nf4tensor litdata:litdata tensorflow-cpu:tensorflow; do
  module=${package#*:}
  package=${package%%:*}
  if ! has "$module"; then
    echo "setup_peers: installing $package from PyPI into $venv" >&2
    "$venv/bin/pip" install --quiet "$package" ||
      echo "setup_peers: $package could not be installed: its peer is skipped" >&2
  fi
done

# Sourced by stoke's scripts: puts the Python tools of .tools/venv (CMake, Ninja, MkDocs)
# first on PATH.
# shellcheck shell=bash
STOKE_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
export STOKE_ROOT
case ":$PATH:" in
  *":$STOKE_ROOT/.tools/venv/bin:"*) ;;
  *) export PATH="$STOKE_ROOT/.tools/venv/bin:$PATH" ;;
esac

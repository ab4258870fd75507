# Sourced by the scripts that write book/results/ (scripts/record, scripts/soak): `header`.
# shellcheck shell=bash

# header <command...>: the two lines that head a results file: the command, then the date,
# the load, the machine and the commit (marked when the tree outside $results has changes).
header() {
  local commit changes=""
  commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
  if ! git diff --quiet HEAD -- . ":(exclude)${results:-book/results}" 2>/dev/null; then
    changes=" with uncommitted changes"
  fi
  # The load as scripts/quiet.sh's check saw it, where the script sourced it; else as it is now.
  local load
  if declare -F quiet_load >/dev/null; then
    load=$(quiet_load)
  else
    load="load average $(cut -d' ' -f1-3 /proc/loadavg)"
  fi
  echo "\$ $*"
  echo "# $(date -u '+%Y-%m-%d %H:%M UTC'), ${load}," \
    "$(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)," \
    "built from ${commit}${changes}"
}

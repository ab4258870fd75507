# Sourced by every script that writes a results file (scripts/record, bench, image-bench,
# image-bench-realistic, images-run, fashion-bench, shard-bench, python-bench, climate-run,
# multi-gpu-run, gpu-check): figures are recorded only on a quiet machine.
#
# Quiet means: the 1-minute and the 5-minute load averages, read when the recording starts,
# are both at most STOKE_QUIET_LOAD_PER_CORE (default 0.5) times the cores, 1.0 on the 2-core
# machine. Why these: a benchmark here uses every core, so half the cores' worth of other
# work already takes a core from it. And the 1-minute figure alone misses a pause between
# someone else's jobs: book/results/image_bench_realistic.txt was recorded at 0.94 / 2.19 /
# 3.74 (1, 5, 15 minutes) and said stoke was 5.10x DALI; from a fresh clone at 0.83 the same
# script gave 2.47x. Its 1-minute figure passes the threshold, its 5-minute one does not.
#
# quiet_wait <script>: waits for a quiet machine (a build just done raises the load for a few
# minutes), up to STOKE_QUIET_WAIT_S seconds (default 600), printing the load every 30 s. A
# machine still busy then stops the script (exit code 3), before it writes anything, unless
# STOKE_RECORD_UNDER_LOAD=1: then the recording goes on and its header says it is not
# representative. Call it at the top level of the script, not in a pipeline.
# quiet_load: the words on the load that a results file's header gives (see quiet_wait).
# shellcheck shell=bash

# The load average (1 minute) above which the machine is busy: 0.5 a core.
quiet_threshold() {
  awk -v cores="$(nproc)" -v per_core="${STOKE_QUIET_LOAD_PER_CORE:-0.5}" \
    'BEGIN { printf "%.2f", cores * per_core }'
}

# Exit status 0 when the 1- and 5-minute load averages are both at most the threshold.
quiet_now() {
  awk -v limit="$(quiet_threshold)" '{ exit !($1 <= limit && $2 <= limit) }' /proc/loadavg
}

quiet_wait() {
  local script=$1 waited=0 wait_s=${STOKE_QUIET_WAIT_S:-600}
  until quiet_now || ((waited >= wait_s)); do
    if ((waited % 30 == 0)); then
      echo "$script: load average $(cut -d' ' -f1-3 /proc/loadavg) over $(quiet_threshold)" \
        "(1 and 5 min; 0.5 a core of $(nproc)): waiting for a quiet machine, ${waited} s of" \
        "${wait_s} s" >&2
    fi
    sleep 5
    waited=$((waited + 5))
  done
  STOKE_QUIET_LOAD=$(cut -d' ' -f1-3 /proc/loadavg)
  STOKE_QUIET_MARK=""
  if quiet_now; then
    return 0
  fi
  if [[ ${STOKE_RECORD_UNDER_LOAD:-0} != 1 ]]; then
    echo "$script: refusing to record: load average $STOKE_QUIET_LOAD (1, 5, 15 min) is over" \
      "$(quiet_threshold), 0.5 a core of $(nproc) (scripts/quiet.sh). Stop what else runs, or" \
      "set STOKE_RECORD_UNDER_LOAD=1 to write a file marked not representative." >&2
    exit 3
  fi
  STOKE_QUIET_MARK=", NOT REPRESENTATIVE: recorded over the quiet threshold $(quiet_threshold)"
  echo "$script: recording under load $STOKE_QUIET_LOAD; the file says it is not representative" >&2
}

quiet_load() {
  echo "load average ${STOKE_QUIET_LOAD:-$(cut -d' ' -f1-3 /proc/loadavg)}${STOKE_QUIET_MARK:-}"
}

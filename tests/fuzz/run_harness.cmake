# Runs one libFuzzer harness for SECONDS from libFuzzer's seed SEED (0: random) on a fresh
# CORPUS directory seeded from SEEDS; a finding is written to FINDINGS/<harness>-crash-... and
# fails the test, naming the file.
# cmake -DHARNESS=... -DCORPUS=... -DSEEDS=... -DFINDINGS=... -DSECONDS=... -DSEED=...
#       -P run_harness.cmake
file(REMOVE_RECURSE "${CORPUS}")
file(MAKE_DIRECTORY "${CORPUS}" "${FINDINGS}")
get_filename_component(name "${HARNESS}" NAME)
execute_process(
  COMMAND "${HARNESS}" -seed=${SEED} -max_total_time=${SECONDS} -timeout=10 -rss_limit_mb=2048
          -malloc_limit_mb=1024 -print_final_stats=1 -artifact_prefix=${FINDINGS}/${name}-
          "${CORPUS}" "${SEEDS}"
  RESULT_VARIABLE result)
if(NOT result EQUAL 0)
  message(FATAL_ERROR "stoke: ${name} found an input that fails (exit ${result}); it is in "
    "${FINDINGS} (rerun: ${HARNESS} <that file>)")
endif()

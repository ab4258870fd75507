# cmake -DRANKS=<r,r,...> -DMESSAGE=<regex> -P expect_job_failure.cmake -- <command>...
# Runs the command (an mpirun job) and succeeds only when it exits non-zero and each rank in
# RANKS printed a line "stoke: rank R of N: ..." matching MESSAGE.
set(command "")
set(after_separator FALSE)
math(EXPR last "${CMAKE_ARGC} - 1")
foreach(i RANGE ${last})
  if(after_separator)
    list(APPEND command "${CMAKE_ARGV${i}}")
  elseif(CMAKE_ARGV${i} STREQUAL "--")
    set(after_separator TRUE)
  endif()
endforeach()
if(NOT command)
  message(FATAL_ERROR "expect_job_failure: no command after --")
endif()

execute_process(COMMAND ${command} RESULT_VARIABLE result OUTPUT_VARIABLE output
  ERROR_VARIABLE output TIMEOUT 50)
message("${output}")
if(result EQUAL 0)
  message(FATAL_ERROR "expect_job_failure: the job succeeded; it should have failed")
endif()
if(NOT result MATCHES "^[0-9]+$")
  message(FATAL_ERROR "expect_job_failure: the job did not exit by itself: ${result}")
endif()
string(REPLACE "," ";" ranks "${RANKS}")
foreach(rank IN LISTS ranks)
  if(NOT output MATCHES "stoke: rank ${rank} of [0-9]+: [^\n]*${MESSAGE}")
    message(FATAL_ERROR "expect_job_failure: rank ${rank} did not report '${MESSAGE}'")
  endif()
endforeach()
message(STATUS "expect_job_failure: the job failed (exit code ${result}) and ranks ${RANKS} "
  "reported '${MESSAGE}'")

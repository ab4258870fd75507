# A near-miss test: SOURCE, a type one member short of a stoke concept handed to an API
# constrained by it, must fail to compile, and the compiler must name both the missing member
# and the concept. With -DSTOKE_NEAR_MISS_FIXED (the member added) it must compile, so the
# failure is the missing member and nothing else.
#
#   cmake -DCOMPILER=<c++> -DFLAGS=<response file> -DSOURCE=<file.cpp> -DEXPECT=<regex|regex...>
#         -P expect_compile_error.cmake

set(command "${COMPILER}" "@${FLAGS}" -fsyntax-only)
execute_process(COMMAND ${command} -DSTOKE_NEAR_MISS_FIXED "${SOURCE}"
  RESULT_VARIABLE result OUTPUT_VARIABLE output ERROR_VARIABLE output)
if(NOT result EQUAL 0)
  message(FATAL_ERROR "${SOURCE} does not compile even with the missing member added "
    "(STOKE_NEAR_MISS_FIXED):\n${output}")
endif()

execute_process(COMMAND ${command} "${SOURCE}"
  RESULT_VARIABLE result OUTPUT_VARIABLE output ERROR_VARIABLE output)
if(result EQUAL 0)
  message(FATAL_ERROR "${SOURCE} compiled, but its type lacks a member the concept requires")
endif()
string(REPLACE "|" ";" patterns "${EXPECT}")
foreach(pattern IN LISTS patterns)
  if(NOT output MATCHES "${pattern}")
    message(FATAL_ERROR "the compiler's diagnostic for ${SOURCE} does not match '${pattern}':\n${output}")
  endif()
  message(STATUS "diagnostic matches '${pattern}': ${CMAKE_MATCH_0}")
endforeach()

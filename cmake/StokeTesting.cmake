# Helpers for stoke's GoogleTest suites.
find_package(GTest REQUIRED)
include(GoogleTest)

option(STOKE_LOADER_TESTS_ONLY "Build only the suites labelled 'loader' (sanitizer builds)" OFF)
option(STOKE_BUILD_FUZZERS "Build the libFuzzer harnesses of tests/fuzz (Clang; the asan preset)" OFF)

# stoke_add_test(<name> LABELS <label>... SOURCES <file>... [LIBRARIES <lib>...])
# One GoogleTest executable; every test case becomes a CTest test carrying LABELS.
function(stoke_add_test name)
  cmake_parse_arguments(ARG "" "" "LABELS;SOURCES;LIBRARIES" ${ARGN})
  if(STOKE_LOADER_TESTS_ONLY AND NOT "loader" IN_LIST ARG_LABELS)
    return()
  endif()
  add_executable(${name} ${ARG_SOURCES} ${PROJECT_SOURCE_DIR}/tests/support/stoke_test_support.cpp)
  target_link_libraries(${name} PRIVATE stoke::stoke GTest::gmock GTest::gtest GTest::gtest_main ${ARG_LIBRARIES})
  target_include_directories(${name} PRIVATE ${PROJECT_SOURCE_DIR}/tests/support)
  gtest_discover_tests(${name} PROPERTIES LABELS "${ARG_LABELS}" DISCOVERY_TIMEOUT 120)
endfunction()

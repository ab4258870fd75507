# Helpers for stoke's GoogleTest suites.
find_package(GTest REQUIRED)
include(GoogleTest)

option(STOKE_LOADER_TESTS_ONLY "Build only the suites labelled 'loader' (sanitizer builds)" OFF)
option(STOKE_BUILD_FUZZERS "Build the libFuzzer harnesses of tests/fuzz (Clang; the asan preset)" OFF)
set(STOKE_TEST_LABELS "" CACHE STRING
  "Build only the tests that carry one of these labels (a ;-list; empty: every test). \
STOKE_LOADER_TESTS_ONLY adds 'loader'")
option(STOKE_TEST_PCH
  "Compile the test executables with one precompiled header: GoogleTest and tests/support" ON)
option(STOKE_UNITY_TESTS
  "Compile each test executable of several sources as one translation unit (a unity build): \
its sources instantiate the same templates, which are then compiled once" ON)
option(STOKE_CONSUMER_TESTS
  "Add the install tests' consumer projects (cmake --install, find_package, add_subdirectory, \
FetchContent): they check CMake packaging, the same whatever the compiler, so the gcc preset \
leaves them to the default preset (tests/install's near misses, compiler diagnostics, run in both)" ON)
option(STOKE_TEST_PER_CASE
  "One CTest test per GoogleTest case (gtest_discover_tests) instead of one per test executable" OFF)

set(STOKE_TEST_LABELS_EXCLUDED "" CACHE STRING
  "Build no test that carries one of these labels (a ;-list; the default preset leaves out \
'cuda': the gcc preset compiles the CUDA suites with scripts/gpu-check's host compiler)")

# stoke_test_labels_wanted(<out> <label>...): <out> is TRUE when a test with these labels is
# built in this tree (STOKE_TEST_LABELS and STOKE_LOADER_TESTS_ONLY pick the suites;
# STOKE_TEST_LABELS_EXCLUDED leaves some out).
function(stoke_test_labels_wanted out)
  foreach(label IN LISTS ARGN)
    if(label IN_LIST STOKE_TEST_LABELS_EXCLUDED)
      set(${out} FALSE PARENT_SCOPE)
      return()
    endif()
  endforeach()
  set(wanted ${STOKE_TEST_LABELS})
  if(STOKE_LOADER_TESTS_ONLY)
    list(APPEND wanted loader)
  endif()
  if(NOT wanted)
    set(${out} TRUE PARENT_SCOPE)
    return()
  endif()
  foreach(label IN LISTS ARGN)
    if(label IN_LIST wanted)
      set(${out} TRUE PARENT_SCOPE)
      return()
    endif()
  endforeach()
  set(${out} FALSE PARENT_SCOPE)
endfunction()

# What every suite links: tests/support (stoke_test_support.cpp, which includes the whole
# library, compiled once per build tree, not once per test executable), stoke and GoogleTest.
if(NOT TARGET stoke_test_support)
  add_library(stoke_test_support STATIC ${PROJECT_SOURCE_DIR}/tests/support/stoke_test_support.cpp)
  target_link_libraries(stoke_test_support PUBLIC stoke::stoke GTest::gmock GTest::gtest
                                                  GTest::gtest_main)
  target_include_directories(stoke_test_support PUBLIC ${PROJECT_SOURCE_DIR}/tests/support)
  # GoogleTest and the whole library, parsed once per build tree (it is about a third of the
  # time of compiling a test source); every test executable reuses it (stoke_test_use_pch).
  if(STOKE_TEST_PCH)
    target_precompile_headers(stoke_test_support PRIVATE <gmock/gmock.h> <gtest/gtest.h>
                              ${PROJECT_SOURCE_DIR}/tests/support/stoke_test_support.hpp)
  endif()
endif()

# A test program that crashes prints its stack (tests/support/crash_report.cpp), for crashes
# seen only on another machine. Compiled once; stoke_test_reports_crashes(<target>) links its
# object into <target> (every stoke_add_test executable does).
if(NOT TARGET stoke_crash_report)
  add_library(stoke_crash_report OBJECT ${PROJECT_SOURCE_DIR}/tests/support/crash_report.cpp)
  target_include_directories(stoke_crash_report PRIVATE ${PROJECT_SOURCE_DIR}/tests/support)
  target_compile_features(stoke_crash_report PRIVATE cxx_std_20)
  target_link_libraries(stoke_crash_report INTERFACE ${CMAKE_DL_LIBS})
endif()
function(stoke_test_reports_crashes target)
  target_link_libraries(${target} PRIVATE stoke_crash_report)
endfunction()

# stoke_test_use_pch(<target>): <target>, which links stoke_test_support, compiles with its
# precompiled header (where STOKE_TEST_PCH is ON). Its sources see that header first; a
# test's own definitions (-D) and include directories add to it.
function(stoke_test_use_pch target)
  if(STOKE_TEST_PCH)
    target_precompile_headers(${target} REUSE_FROM stoke_test_support)
  endif()
endfunction()

# stoke_test_use_unity_build(<target>): <target>'s sources compile as one translation unit where
# STOKE_UNITY_TESTS is ON: a test executable's files instantiate the same templates of the
# library (loaders, learners, backends), which a unity build compiles once instead of once a
# file. The files of one executable therefore keep their file-local names apart.
# stoke_unity_names_test (tests/CMakeLists.txt) checks that they do.
function(stoke_test_use_unity_build target)
  if(NOT STOKE_UNITY_TESTS)
    return()
  endif()
  set_target_properties(${target} PROPERTIES UNITY_BUILD ON UNITY_BUILD_BATCH_SIZE 0)
  get_target_property(sources ${target} SOURCES)
  list(FILTER sources INCLUDE REGEX "[.]cpp$")
  list(LENGTH sources count)
  if(count GREATER 1)
    set(files "")
    foreach(source IN LISTS sources)
      cmake_path(ABSOLUTE_PATH source BASE_DIRECTORY "${CMAKE_CURRENT_SOURCE_DIR}")
      list(APPEND files "${source}")
    endforeach()
    list(JOIN files "," files)
    set_property(GLOBAL APPEND PROPERTY STOKE_UNITY_TARGETS "${target}=${files}")
  endif()
endfunction()

# stoke_unity_names_test(): a test (label `unit`) that no two files of one unity-built test
# executable define the same file-local name (scripts/check_unity_names.py); called once every
# test executable is defined.
function(stoke_unity_names_test)
  get_property(targets GLOBAL PROPERTY STOKE_UNITY_TARGETS)
  if(NOT targets)
    return()
  endif()
  find_package(Python3 REQUIRED COMPONENTS Interpreter)
  add_test(NAME stoke_unity_file_local_names
    COMMAND Python3::Interpreter ${PROJECT_SOURCE_DIR}/scripts/check_unity_names.py ${targets})
  set_tests_properties(stoke_unity_file_local_names PROPERTIES LABELS unit)
endfunction()

# GoogleTest writes each test executable's results here (--gtest_output=json), one file per
# CTest test, <test>.json; scripts/test counts the test cases from them.
set(STOKE_GTEST_RESULTS_DIR "${CMAKE_BINARY_DIR}/gtest-results")

# stoke_add_gtest(<target> LABELS <label>... [PROPERTIES <name> <value>...]): runs the GoogleTest
# executable <target> under CTest, carrying LABELS and the test PROPERTIES. By default the
# executable is one CTest test (one process runs all its cases; a crash or a sanitizer report
# fails it), whose case results go to STOKE_GTEST_RESULTS_DIR/<target>.json. With
# STOKE_TEST_PER_CASE every case is a CTest test of its own (gtest_discover_tests).
# SKIP_REGULAR_EXPRESSION applies to per-case tests only: on a whole executable it would hide
# a failing case behind a skipped one (scripts/test counts skipped cases from the results).
function(stoke_add_gtest target)
  cmake_parse_arguments(ARG "" "" "LABELS;PROPERTIES" ${ARGN})
  if(STOKE_TEST_PER_CASE)
    gtest_discover_tests(${target} PROPERTIES LABELS "${ARG_LABELS}" ${ARG_PROPERTIES}
                         DISCOVERY_TIMEOUT 120)
    return()
  endif()
  set(properties "")
  set(skip FALSE)
  foreach(item IN LISTS ARG_PROPERTIES)
    if(skip)
      set(skip FALSE)
    elseif(item STREQUAL "SKIP_REGULAR_EXPRESSION")
      set(skip TRUE)
    else()
      list(APPEND properties "${item}")
    endif()
  endforeach()
  add_test(NAME ${target}
    COMMAND ${target} "--gtest_output=json:${STOKE_GTEST_RESULTS_DIR}/${target}.json")
  # All the cases of a suite run in one process (the longest, stoke_semantics, takes seconds
  # at -O2 and under a minute in the Debug `quick` preset); a hang ends after TIMEOUT.
  set_tests_properties(${target} PROPERTIES LABELS "${ARG_LABELS}" TIMEOUT 600 ${properties})
endfunction()

# stoke_test_python(<out>): the Python interpreter of the tests that run Python: STOKE_PYTHON
# (scripts/setup's, with its packages), else the one find_package(Python3) finds, else empty.
function(stoke_test_python out)
  set(python "${STOKE_PYTHON}")
  if(NOT python)
    find_package(Python3 COMPONENTS Interpreter QUIET)
    set(python "${Python3_EXECUTABLE}")
  endif()
  set(${out} "${python}" PARENT_SCOPE)
endfunction()

# stoke_add_test(<name> LABELS <label>... SOURCES <file>... [LIBRARIES <lib>...])
# One GoogleTest executable, run by CTest with LABELS (stoke_add_gtest).
function(stoke_add_test name)
  cmake_parse_arguments(ARG "" "" "LABELS;SOURCES;LIBRARIES" ${ARGN})
  stoke_test_labels_wanted(wanted ${ARG_LABELS})
  if(NOT wanted)
    return()
  endif()
  add_executable(${name} ${ARG_SOURCES})
  target_link_libraries(${name} PRIVATE stoke_test_support ${ARG_LIBRARIES})
  stoke_test_reports_crashes(${name})
  stoke_test_use_pch(${name})
  stoke_test_use_unity_build(${name})
  stoke_add_gtest(${name} LABELS ${ARG_LABELS})
endfunction()

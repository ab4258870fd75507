# stoke::module (target stoke_module): the C++20 named module `stoke` (modules/stoke.cppm),
# a thin `export using` wrapper over the headers of stoke::stoke and stoke::learner.
#
# Option STOKE_ENABLE_MODULE. Its default is ON where CMake can build C++20 named modules with
# this toolchain: CMake >= 3.28, a Ninja generator, and Clang >= 17 (with clang-scan-deps) or
# GCC >= 14; it is OFF in the sanitizer builds of the loader tests (STOKE_LOADER_TESTS_ONLY).
# Configure says whether the module is built and, if not, why. Turning it ON where the
# toolchain cannot build it is an error that says why.
#
# Sources that `import stoke;` call stoke_target_imports_module(<target>) (see below).

# Why this toolchain cannot build the module (empty: it can).
set(_stoke_module_unsupported "")
if(CMAKE_VERSION VERSION_LESS 3.28)
  set(_stoke_module_unsupported "CMake ${CMAKE_VERSION} is older than 3.28")
elseif(NOT CMAKE_GENERATOR MATCHES "^Ninja")
  set(_stoke_module_unsupported
    "the generator is '${CMAKE_GENERATOR}'; stoke builds its module with Ninja only (-G Ninja)")
elseif(CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
  if(CMAKE_CXX_COMPILER_VERSION VERSION_LESS 17)
    set(_stoke_module_unsupported "Clang ${CMAKE_CXX_COMPILER_VERSION} is older than 17")
  elseif(NOT CMAKE_CXX_COMPILER_CLANG_SCAN_DEPS OR NOT EXISTS "${CMAKE_CXX_COMPILER_CLANG_SCAN_DEPS}")
    # CMake looks for clang-scan-deps(-<version>) next to the compiler when it enables C++.
    set(_stoke_module_unsupported
      "clang-scan-deps was not found for Clang ${CMAKE_CXX_COMPILER_VERSION}: install it or pass "
      "-DCMAKE_CXX_COMPILER_CLANG_SCAN_DEPS=/path/to/clang-scan-deps on a fresh configure")
  endif()
elseif(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
  if(CMAKE_CXX_COMPILER_VERSION VERSION_LESS 14)
    set(_stoke_module_unsupported "GCC ${CMAKE_CXX_COMPILER_VERSION} is older than 14")
  endif()
else()
  set(_stoke_module_unsupported
    "the compiler is ${CMAKE_CXX_COMPILER_ID} ${CMAKE_CXX_COMPILER_VERSION}, not Clang >= 17 or GCC >= 14")
endif()

if(_stoke_module_unsupported)
  set(_stoke_module_default OFF)
elseif(STOKE_LOADER_TESTS_ONLY)
  set(_stoke_module_default OFF)
  set(_stoke_module_off_by_default "in sanitizer builds of the loader tests, STOKE_LOADER_TESTS_ONLY=ON")
else()
  set(_stoke_module_default ON)
endif()
option(STOKE_ENABLE_MODULE "Build the C++20 named module 'stoke' (stoke::module)" ${_stoke_module_default})

if(STOKE_ENABLE_MODULE AND _stoke_module_unsupported)
  message(FATAL_ERROR "stoke: STOKE_ENABLE_MODULE is ON but this toolchain cannot build C++20 "
    "modules: ${_stoke_module_unsupported}. Configure with -DSTOKE_ENABLE_MODULE=OFF.")
elseif(STOKE_ENABLE_MODULE)
  set(_stoke_module_how "${CMAKE_CXX_COMPILER_ID} ${CMAKE_CXX_COMPILER_VERSION}, ${CMAKE_GENERATOR}")
  if(CMAKE_CXX_COMPILER_CLANG_SCAN_DEPS)
    string(APPEND _stoke_module_how ", ${CMAKE_CXX_COMPILER_CLANG_SCAN_DEPS}")
  endif()
  message(STATUS "stoke: C++ module 'stoke' (stoke::module): built (${_stoke_module_how})")
elseif(_stoke_module_unsupported)
  message(STATUS "stoke: C++ module 'stoke' (stoke::module): not built: ${_stoke_module_unsupported}")
elseif(_stoke_module_off_by_default)
  message(STATUS "stoke: C++ module 'stoke' (stoke::module): not built: STOKE_ENABLE_MODULE is OFF "
    "(its default ${_stoke_module_off_by_default})")
else()
  message(STATUS "stoke: C++ module 'stoke' (stoke::module): not built: STOKE_ENABLE_MODULE is OFF")
endif()

if(STOKE_ENABLE_MODULE)
  add_library(stoke_module STATIC)
  add_library(stoke::module ALIAS stoke_module)
  target_sources(stoke_module PUBLIC
    FILE_SET CXX_MODULES BASE_DIRS "${PROJECT_SOURCE_DIR}/modules"
    FILES "${PROJECT_SOURCE_DIR}/modules/stoke.cppm")
  target_compile_features(stoke_module PUBLIC cxx_std_20)
  target_link_libraries(stoke_module PUBLIC stoke::stoke stoke::learner)
  set_target_properties(stoke_module PROPERTIES EXPORT_NAME module)
endif()

# stoke_target_imports_module(<target>): <target>'s sources may `import stoke;`. Links
# stoke::module and has CMake scan the target's sources for imports (the project's policy
# scans only targets that ask for it, so header-only targets build as before).
function(stoke_target_imports_module target)
  target_link_libraries(${target} PRIVATE stoke::module)
  set_target_properties(${target} PROPERTIES CXX_SCAN_FOR_MODULES ON)
endfunction()

unset(_stoke_module_unsupported)
unset(_stoke_module_default)
unset(_stoke_module_how)
unset(_stoke_module_off_by_default)

# The fixture of the install tests: installs the build tree into a fresh prefix, then checks
# the layout: every header of every installed area, the package files, the module source,
# and no path into the source or build tree in the installed CMake files (relocatable).
#
#   cmake -DBUILD_DIR=<build> -DPREFIX=<prefix> -DCONFIG=<config> -DSOURCE_DIR=<source>
#         -DHEADER_DIRS=<dir|dir...> -DCOMPONENTS=<component|...> -DCMAKE_DIR=<lib/cmake/stoke>
#         [-DMODULE_ARCHIVE=<lib/libstoke_module.a>] -P install_to_prefix.cmake

file(REMOVE_RECURSE "${PREFIX}")
execute_process(
  COMMAND "${CMAKE_COMMAND}" --install "${BUILD_DIR}" --prefix "${PREFIX}" --config "${CONFIG}"
  RESULT_VARIABLE result OUTPUT_VARIABLE output ERROR_VARIABLE output)
if(NOT result EQUAL 0)
  message(FATAL_ERROR "cmake --install failed (${result}):\n${output}")
endif()

set(missing "")
macro(expect_file path)
  if(NOT EXISTS "${PREFIX}/${path}")
    list(APPEND missing "${path}")
  endif()
endmacro()

# Every header of the source (and generated) include directories of the installed targets.
string(REPLACE "|" ";" header_dirs "${HEADER_DIRS}")
set(header_count 0)
foreach(dir IN LISTS header_dirs)
  file(GLOB_RECURSE headers RELATIVE "${dir}" "${dir}/*.hpp")
  foreach(header IN LISTS headers)
    expect_file("include/${header}")
    math(EXPR header_count "${header_count} + 1")
  endforeach()
endforeach()

set(cmake_dir "${CMAKE_DIR}")
foreach(file stokeConfig.cmake stokeConfigVersion.cmake stoke-targets.cmake)
  expect_file("${cmake_dir}/${file}")
endforeach()
string(REPLACE "|" ";" components "${COMPONENTS}")
foreach(component IN LISTS components)
  expect_file("${cmake_dir}/stoke-${component}-targets.cmake")
endforeach()
if("module" IN_LIST components)
  expect_file("include/stoke/stoke.cppm")
  expect_file("${MODULE_ARCHIVE}")
endif()
if(missing)
  list(JOIN missing "\n  " text)
  message(FATAL_ERROR "the install into ${PREFIX} lacks:\n  ${text}")
endif()

# The installed package must not point back into the trees it was built from.
file(GLOB_RECURSE cmake_files "${PREFIX}/${cmake_dir}/*.cmake")
foreach(file IN LISTS cmake_files)
  file(READ "${file}" text)
  foreach(tree "${SOURCE_DIR}" "${BUILD_DIR}")
    string(FIND "${text}" "${tree}" position)
    if(position GREATER -1)
      message(FATAL_ERROR "${file} names ${tree}: the install is not relocatable")
    endif()
  endforeach()
endforeach()

list(LENGTH cmake_files cmake_count)
message(STATUS "installed into ${PREFIX}: ${header_count} headers, ${cmake_count} CMake files, "
  "components: ${COMPONENTS}")

# `cmake --install`: stoke's headers, the module source, the exported targets and a package
# configuration, so that another project finds stoke with
#
#   find_package(stoke 0.1 REQUIRED [COMPONENTS cuda vulkan mpi hdf5 images storage module])
#
# and links stoke::stoke (core, data, CPU backend) and stoke::learner, plus stoke::<component>
# for each component. A component is installed when its target was built here; requesting one
# that was not makes find_package fail and say so (see stokeConfig.cmake.in).
#
# Layout under the prefix:
#   include/stoke/...                   the headers of every area (and generated ones)
#   include/stoke/stoke.cppm            the module interface (component `module`)
#   lib/libstoke_module.a               its object code (component `module`)
#   lib/cmake/stoke/stokeConfig.cmake, stokeConfigVersion.cmake, stoke-targets.cmake,
#   stoke-<component>-targets.cmake     one export set per component, loaded when requested
#
# Option STOKE_INSTALL (default: ON when stoke is the top-level project) turns the rules on.

option(STOKE_INSTALL "Generate stoke's install rules and package configuration" ${PROJECT_IS_TOP_LEVEL})
if(NOT STOKE_INSTALL)
  return()
endif()

include(GNUInstallDirs)
include(CMakePackageConfigHelpers)
set(STOKE_INSTALL_CMAKEDIR "${CMAKE_INSTALL_LIBDIR}/cmake/stoke" CACHE STRING
  "Where stoke's package configuration is installed, relative to the prefix")
mark_as_advanced(STOKE_INSTALL_CMAKEDIR)

# The target namespaces whose packages stokeConfig.cmake.in finds (the core's always; Vulkan,
# MPI, CUDA, HDF5, libpng, pkg-config's libturbojpeg and libcurl for the components that link them). A component linking another
# namespace is reported here, at configure time, since its consumers would lack that package.
set(_stoke_found_namespaces Threads Eigen3 ZLIB nlohmann_json fmt stoke Vulkan MPI CUDA hdf5
  PNG PkgConfig CURL)
function(_stoke_check_link_packages target)
  get_target_property(libraries ${target} INTERFACE_LINK_LIBRARIES)
  foreach(library IN LISTS libraries)
    if(library MATCHES "^([A-Za-z0-9_.+-]+)::" AND NOT CMAKE_MATCH_1 IN_LIST _stoke_found_namespaces)
      message(WARNING "stoke: install: ${target} links ${library}, whose package "
        "cmake/stokeConfig.cmake.in does not find: find_package(stoke) consumers may lack it")
    endif()
  endforeach()
endfunction()

# stoke::stoke (with stoke::core and stoke::cpu) and the learner (with its kernel contract,
# stoke::learner_kernels, which the CUDA and Vulkan components link too): always installed, in
# export set stoke-targets. Each target's headers are its FILE_SET HEADERS, installed under
# include/ as they lie under the set's base directories (so the tree mirrors
# `#include <stoke/...>`).
install(TARGETS stoke stoke_core stoke_cpu stoke_learner_kernels stoke_learner EXPORT stoke-targets
  FILE_SET HEADERS DESTINATION "${CMAKE_INSTALL_INCLUDEDIR}")
foreach(_stoke_target IN ITEMS stoke stoke_core stoke_cpu stoke_learner_kernels stoke_learner)
  _stoke_check_link_packages(${_stoke_target})
endforeach()
install(EXPORT stoke-targets NAMESPACE stoke:: DESTINATION "${STOKE_INSTALL_CMAKEDIR}")

# The components that were built here, each in its own export set.
set(STOKE_INSTALLED_COMPONENTS "")
set(_stoke_arch_independent ARCH_INDEPENDENT)
foreach(_stoke_component IN ITEMS cuda vulkan mpi hdf5 images storage module)
  if(NOT TARGET stoke::${_stoke_component})
    continue()
  endif()
  get_target_property(_stoke_target stoke::${_stoke_component} ALIASED_TARGET)
  if(NOT _stoke_target)
    set(_stoke_target stoke::${_stoke_component})
  endif()
  set_target_properties(${_stoke_target} PROPERTIES EXPORT_NAME ${_stoke_component})
  get_target_property(_stoke_type ${_stoke_target} TYPE)
  if(NOT _stoke_type STREQUAL "INTERFACE_LIBRARY")
    set(_stoke_arch_independent "")
  endif()
  set(_stoke_file_sets FILE_SET HEADERS DESTINATION "${CMAKE_INSTALL_INCLUDEDIR}")
  if(_stoke_component STREQUAL "module")
    # The module interface unit is installed as source: every consumer compiles its own BMI
    # with its own flags (CMake does this for imported module targets).
    set(_stoke_file_sets FILE_SET CXX_MODULES DESTINATION "${CMAKE_INSTALL_INCLUDEDIR}/stoke")
  endif()
  install(TARGETS ${_stoke_target} EXPORT stoke-${_stoke_component}-targets
    ARCHIVE DESTINATION "${CMAKE_INSTALL_LIBDIR}"
    LIBRARY DESTINATION "${CMAKE_INSTALL_LIBDIR}"
    RUNTIME DESTINATION "${CMAKE_INSTALL_BINDIR}"
    ${_stoke_file_sets})
  _stoke_check_link_packages(${_stoke_target})
  set(_stoke_modules_directory "")
  if(_stoke_component STREQUAL "module")
    set(_stoke_modules_directory CXX_MODULES_DIRECTORY cxx-modules)
  endif()
  install(EXPORT stoke-${_stoke_component}-targets NAMESPACE stoke::
    DESTINATION "${STOKE_INSTALL_CMAKEDIR}" ${_stoke_modules_directory})
  list(APPEND STOKE_INSTALLED_COMPONENTS ${_stoke_component})
endforeach()

configure_package_config_file("${PROJECT_SOURCE_DIR}/cmake/stokeConfig.cmake.in"
  "${PROJECT_BINARY_DIR}/stokeConfig.cmake"
  INSTALL_DESTINATION "${STOKE_INSTALL_CMAKEDIR}")
# 0.y.z: any 0.y' with y' >= y is accepted (SameMajorVersion).
write_basic_package_version_file("${PROJECT_BINARY_DIR}/stokeConfigVersion.cmake"
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMajorVersion ${_stoke_arch_independent})
install(FILES "${PROJECT_BINARY_DIR}/stokeConfig.cmake" "${PROJECT_BINARY_DIR}/stokeConfigVersion.cmake"
  DESTINATION "${STOKE_INSTALL_CMAKEDIR}")

if(STOKE_INSTALLED_COMPONENTS)
  string(REPLACE ";" ", " _stoke_components_text "${STOKE_INSTALLED_COMPONENTS}")
else()
  set(_stoke_components_text "none")
endif()
message(STATUS "stoke: install: stoke::stoke, stoke::learner; components: ${_stoke_components_text}")
foreach(_stoke_variable _stoke_arch_independent _stoke_components_text _stoke_component
    _stoke_target _stoke_type _stoke_file_sets _stoke_modules_directory _stoke_found_namespaces)
  unset(${_stoke_variable})
endforeach()
unset(_stoke_variable)

# ccache, where it is installed, for stoke's own build tree (not when stoke is a subproject,
# and not when a compiler launcher is already given): compiles of unchanged sources with
# unchanged flags come from its cache. Not required. Compiles that use the tests' precompiled
# header are cached when ccache's sloppiness allows it (set here: pch_defines, time_macros).
if(PROJECT_IS_TOP_LEVEL AND NOT DEFINED CMAKE_CXX_COMPILER_LAUNCHER
   AND NOT DEFINED ENV{CMAKE_CXX_COMPILER_LAUNCHER})
  find_program(STOKE_CCACHE ccache)
  mark_as_advanced(STOKE_CCACHE)
  if(STOKE_CCACHE)
    set(_stoke_launcher ${CMAKE_COMMAND} -E env CCACHE_SLOPPINESS=pch_defines,time_macros
                        ${STOKE_CCACHE})
    set(CMAKE_CXX_COMPILER_LAUNCHER ${_stoke_launcher})
    set(CMAKE_CUDA_COMPILER_LAUNCHER ${_stoke_launcher})
    message(STATUS "stoke: compiling through ccache (${STOKE_CCACHE})")
  endif()
endif()

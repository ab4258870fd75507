# Option STOKE_NATIVE_EXAMPLES and stoke_target_native_arch(<target>): the training examples and
# the benchmarks are built and run on one machine, so they may use every instruction it has
# (-march=native).
#
# What -march=native means depends on the processor, and so do the compiler's diagnostics about
# it: on a processor with AVX10.1, Clang 19 warns for every translation unit that "+avx10.1-256
# will be promoted to avx10.1-512" (-Winvalid-feature-combination), which the examples' -Werror
# turns into an error. A CI machine's processor is not chosen, so configure asks the compiler
# once, on an empty program under -Werror, which flags give this machine's instructions cleanly:
# -march=native alone; or with -Wno-invalid-feature-combination (the warning says what the
# compiler does anyway); or, if neither compiles, none (the examples are then built for any
# x86-64, and configure says why).

option(STOKE_NATIVE_EXAMPLES "Compile the training examples and benchmarks for this machine (-march=native)" ON)

set(STOKE_NATIVE_ARCH_FLAGS "")
if(STOKE_NATIVE_EXAMPLES)
  include(CheckCXXCompilerFlag)
  set(_stoke_required_flags "${CMAKE_REQUIRED_FLAGS}")
  set(CMAKE_REQUIRED_FLAGS "${CMAKE_REQUIRED_FLAGS} -Werror")
  check_cxx_compiler_flag("-march=native" STOKE_MARCH_NATIVE_CLEAN)
  if(STOKE_MARCH_NATIVE_CLEAN)
    set(STOKE_NATIVE_ARCH_FLAGS -march=native)
  else()
    check_cxx_compiler_flag("-march=native -Wno-invalid-feature-combination"
      STOKE_MARCH_NATIVE_WITHOUT_FEATURE_WARNING)
    if(STOKE_MARCH_NATIVE_WITHOUT_FEATURE_WARNING)
      set(STOKE_NATIVE_ARCH_FLAGS -march=native -Wno-invalid-feature-combination)
    else()
      message(STATUS "stoke: -march=native does not compile cleanly with "
        "${CMAKE_CXX_COMPILER_ID} ${CMAKE_CXX_COMPILER_VERSION} on this machine: the examples and "
        "benchmarks are built for any processor of its architecture")
    endif()
  endif()
  set(CMAKE_REQUIRED_FLAGS "${_stoke_required_flags}")
  unset(_stoke_required_flags)
endif()

# stoke_target_native_arch(<target>): <target> compiles for this machine's processor, with the
# flags found above (none where STOKE_NATIVE_EXAMPLES is OFF or none compiles cleanly).
function(stoke_target_native_arch target)
  if(STOKE_NATIVE_ARCH_FLAGS)
    target_compile_options(${target} PRIVATE ${STOKE_NATIVE_ARCH_FLAGS})
  endif()
endfunction()

# stoke_component_option(<NAME> <what> AVAILABLE <bool> FOUND <text>): the option
# STOKE_ENABLE_<NAME> of one optional part of stoke (<what>, e.g. "stoke::mpi, the MPI process
# group"), ON by default where what the part needs was found (<bool>). One status line says
# whether the part is built and why (<text>: what was found, or what is missing and how to get
# it); a part turned ON that cannot be built stops the configuration with that reason. The
# caller then builds the part where STOKE_ENABLE_<NAME> is ON.
function(stoke_component_option name what)
  cmake_parse_arguments(ARG "" "AVAILABLE;FOUND" "" ${ARGN})
  set(available OFF)
  if(ARG_AVAILABLE)
    set(available ON)
  endif()
  option(STOKE_ENABLE_${name} "Build ${what} (default: ON when what it needs is found)" ${available})
  if(STOKE_ENABLE_${name} AND NOT available)
    message(FATAL_ERROR "stoke: STOKE_ENABLE_${name} is ON but ${what} cannot be built: "
      "${ARG_FOUND} (or set -DSTOKE_ENABLE_${name}=OFF)")
  endif()
  set(state "not built")
  if(STOKE_ENABLE_${name})
    set(state "built")
  endif()
  message(STATUS "stoke: ${what}: ${state}; ${ARG_FOUND}")
endfunction()

# Wraps glslc's `-mfmt=num` output (comma-separated 32-bit SPIR-V words) into a C++ header
# that defines `stoke::vulkan::shaders::<NAME>` as a `std::uint32_t` array.
# cmake -DINPUT=<words> -DOUTPUT=<header> -DNAME=<identifier> -DSOURCE=<shader> -P embed_spirv.cmake
foreach(var INPUT OUTPUT NAME SOURCE)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "embed_spirv.cmake: ${var} is not set")
  endif()
endforeach()
file(READ "${INPUT}" words)
string(STRIP "${words}" words)
get_filename_component(source_name "${SOURCE}" NAME)
file(WRITE "${OUTPUT}" "#pragma once
// Generated at build time from ${source_name} by glslc; not in git, do not edit.

#include <cstdint>

namespace stoke::vulkan::shaders {

/// The SPIR-V of ${source_name}.
inline constexpr std::uint32_t ${NAME}[] = {
${words}
};

}  // namespace stoke::vulkan::shaders
")

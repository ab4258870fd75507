#pragma once
/// @file
/// Conformance hooks of the CUDA backend: skipped, with the reason, without a CUDA device.

#include <cstddef>
#include <string>
#include <vector>

#include <stoke/cuda.hpp>

#include "cuda_skip.hpp"

#include "conformance_traits.hpp"

namespace stoke::testing {

template <>
struct ConformanceTraits<cuda::Backend> {
  /// The batches a device-resident model reads.
  using ImageBatch = cuda::ImageBatch;
  /// CUDA divides and takes square roots correctly rounded, as the host does.
  static constexpr float adam_relative_error = 0.0f;
  /// `count` devices; with fewer visible, they repeat (`cuda:0, cuda:0` on one GPU), so the
  /// suite still checks that batches land where the loader is set.
  static std::vector<cuda::Device> devices(std::size_t count) {
    const auto visible = cuda::Backend::devices();
    std::vector<cuda::Device> out(count);
    for (std::size_t i = 0; i < count && !visible.empty(); ++i)
      out[i] = visible[i % visible.size()];
    return out;
  }
  /// Why CUDA cannot run here; under `STOKE_REQUIRE_CUDA=1` that is also a failure.
  static std::string skip_reason() {
    std::string why = cuda::unavailable_reason();
    if (!why.empty() && cuda_required()) ADD_FAILURE() << why << " (STOKE_REQUIRE_CUDA=1)";
    return why;
  }
  static void set_up() {}
  static void tear_down() {}
  static bool uploaded(const cuda::Buffer& buffer) { return buffer.written().ready(); }
};

}  // namespace stoke::testing

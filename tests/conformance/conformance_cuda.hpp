#pragma once
/// @file
/// Conformance hooks of the CUDA backend: skipped, with the reason, without a CUDA device.

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include <stoke/cuda.hpp>
#include <stoke/cuda/fault_injection.hpp>

#include "cuda_skip.hpp"

#include "conformance_traits.hpp"

namespace stoke::testing {

template <>
struct ConformanceTraits<cuda::Backend> {
  /// The batches a device-resident model reads.
  using ImageBatch = cuda::ImageBatch;
  /// CUDA divides and takes square roots correctly rounded, as the host does.
  static constexpr float adam_relative_error = 0.0f;
  /// `count` devices, lanes where there are fewer GPUs (`cuda:0, cuda:0.1` on one GPU), so the
  /// suite checks that batches land on the lane the loader is set to; without a GPU (where the
  /// suite skips) `count` placeholders.
  static std::vector<cuda::Device> devices(std::size_t count) {
    if (cuda::Backend::devices().empty()) return std::vector<cuda::Device>(count);
    return cuda::Backend::devices(count);
  }
  /// Why CUDA cannot run here; under `STOKE_REQUIRE_CUDA=1` that is also a failure.
  static std::string skip_reason() {
    std::string why = cuda::unavailable_reason();
    if (!why.empty() && cuda_required()) ADD_FAILURE() << why << " (STOKE_REQUIRE_CUDA=1)";
    return why;
  }
  /// No copy fails unless a test asks for it.
  static void set_up() { cuda::testing::fail_copy(std::nullopt); }
  /// Turns `fail_copy` off again.
  static void tear_down() { cuda::testing::fail_copy(std::nullopt); }
  static bool uploaded(const cuda::Buffer& buffer) { return buffer.written().ready(); }
  /// Makes copy `copy` of every stager made from now on fail at its fence, in process (the
  /// backend's test-only fault injection; a real device fault is tests/cuda's death test).
  static void fail_copy(std::size_t copy) { cuda::testing::fail_copy(copy); }
};

}  // namespace stoke::testing

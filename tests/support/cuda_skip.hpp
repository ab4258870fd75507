#pragma once
/// @file
/// Skips a CUDA test, saying why, where this machine has no usable CUDA device; with
/// `STOKE_REQUIRE_CUDA=1` in the environment (scripts/gpu-check sets it) the same reason is
/// a failure instead, so a GPU run cannot pass by skipping.

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include <stoke/cuda.hpp>

namespace stoke::testing {

/// Whether `STOKE_REQUIRE_CUDA=1`: a CUDA test that cannot run fails rather than skips.
[[nodiscard]] inline bool cuda_required() {
  const char* value = std::getenv("STOKE_REQUIRE_CUDA");
  return value != nullptr && std::string_view(value) == "1";
}

}  // namespace stoke::testing

/// Skips the test saying why unless at least `count` CUDA devices are visible. Under
/// `STOKE_REQUIRE_CUDA=1`, no usable device at all is a failure; too few is still a skip.
#define STOKE_CUDA_REQUIRE_DEVICES(count)                                                \
  do {                                                                                   \
    if (const std::string why = ::stoke::cuda::unavailable_reason(); !why.empty()) {     \
      if (::stoke::testing::cuda_required()) FAIL() << why << " (STOKE_REQUIRE_CUDA=1)"; \
      GTEST_SKIP() << why;                                                               \
    }                                                                                    \
    if (::stoke::cuda::Backend::devices().size() < static_cast<std::size_t>(count))      \
      GTEST_SKIP() << "needs " << (count) << " CUDA devices, found "                     \
                   << ::stoke::cuda::Backend::devices().size();                          \
  } while (false)

#pragma once
/// @file
/// Test support for device training: fixed float patterns, tensors of a `stoke::DeviceBackend`
/// holding them, and the learner's reduced buffer.

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include <stoke/core/collective.hpp>
#include <stoke/core/rng.hpp>

namespace stoke::testing {

/// The parameters of the optimizer kernels' conformance tests, and the shard of them that a
/// device steps: [5, 25).
inline constexpr std::size_t kTestParameters = 37;
inline constexpr ParameterShard kTestShard{5, 25};

/// `count` floats of a fixed pseudo-random pattern in [-1, 1), different for every `seed`.
inline std::vector<float> float_pattern(std::size_t count, std::uint64_t seed) {
  SampleRng rng(seed, 0, 0);
  std::vector<float> out(count);
  for (float& x : out) x = static_cast<float>(rng() % 2000) / 1000.0f - 1.0f;
  return out;
}

/// A tensor of backend `B` on `device` holding `values` (floats, or other 4-byte values).
template <class B, class T>
typename B::Tensor device_tensor(const typename B::Device& device, const std::vector<T>& values) {
  static_assert(sizeof(T) == sizeof(float));
  typename B::Tensor out = B::zeros(device, values.size());
  B::upload(out, std::as_bytes(std::span(values)));
  return out;
}

/// A reduced buffer: `gradient_sums`, then a loss sum of 2.5, `count` items and 1 correct.
inline std::vector<float> reduced_values(const std::vector<float>& gradient_sums, float count) {
  std::vector<float> out = gradient_sums;
  out.insert(out.end(), {2.5f, count, 1.0f});
  return out;
}

}  // namespace stoke::testing

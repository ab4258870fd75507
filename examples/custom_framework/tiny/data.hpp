#pragma once
/// @file
/// tiny's data: the "two moons" dataset (two interleaved half circles, with noise) and a
/// batcher that stacks samples into a tensor on the device the batch is for. No stoke here:
/// they satisfy stoke's `Dataset` and `Batcher` concepts by their members.

#include <array>
#include <atomic>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <numbers>
#include <vector>

#include "backend.hpp"

namespace tiny {

/// A 64-bit mixing function (SplitMix64's finaliser): tiny's own counter-based randomness.
constexpr std::uint64_t mix(std::uint64_t x) noexcept {
  x ^= x >> 30;
  x *= 0xBF58476D1CE4E5B9ull;
  x ^= x >> 27;
  x *= 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

/// A uniform float in [0, 1) from `key`.
constexpr float uniform(std::uint64_t key) noexcept {
  return static_cast<float>(mix(key) >> 40) * 0x1.0p-24f;
}

/// One point and its class.
struct Sample {
  std::array<float, 2> point{};
  int label = 0;
};

// --8<-- [start:dataset]
/// `count` points on two interleaved half circles, class 0 above and class 1 below, with
/// Gaussian noise; point `i` is a pure function of (seed, i), so `get` is cheap, needs no
/// storage and may be called from any thread.
class Moons {
 public:
  Moons(std::size_t count, std::uint64_t seed, float noise = 0.1f)
      : count_(count), seed_(seed), noise_(noise) {}

  [[nodiscard]] std::size_t size() const noexcept { return count_; }

  [[nodiscard]] Sample get(std::size_t i) const {
    const std::uint64_t key = mix(seed_ ^ mix(i));
    const int label = static_cast<int>(i % 2);
    const float angle = std::numbers::pi_v<float> * uniform(key);
    // Box-Muller: two normal draws for the noise.
    const float radius = std::sqrt(-2.0f * std::log(1.0f - uniform(key + 1)));
    const float turn = 2.0f * std::numbers::pi_v<float> * uniform(key + 2);
    Sample sample{{std::cos(angle), std::sin(angle)}, label};
    if (label == 1) sample.point = {1.0f - sample.point[0], 0.5f - sample.point[1]};
    sample.point[0] += noise_ * radius * std::cos(turn);
    sample.point[1] += noise_ * radius * std::sin(turn);
    return sample;
  }

 private:
  std::size_t count_;
  std::uint64_t seed_;
  float noise_;
};
// --8<-- [end:dataset]

/// A batch: the points as an `n x 2` tensor on one device, and their classes.
struct Batch {
  Tensor inputs;
  std::vector<int> labels;
};

// --8<-- [start:batcher]
/// Stacks samples into a `Batch` on the device it is given, the device the batch is for
/// (a GPU framework would copy there). Counts the batches it made per device.
class Batcher {
 public:
  Batcher() : made_(std::make_shared<std::array<std::atomic<std::size_t>, 8>>()) {}

  [[nodiscard]] Batch batch(std::vector<Sample> samples, const Device& device) const {
    Batch out{Tensor(samples.size(), 2, device), {}};
    for (std::size_t row = 0; row < samples.size(); ++row) {
      out.inputs(row, 0) = samples[row].point[0];
      out.inputs(row, 1) = samples[row].point[1];
      out.labels.push_back(samples[row].label);
    }
    ++(*made_)[static_cast<std::size_t>(device.id) % made_->size()];
    return out;
  }

  /// Batches made so far for `device` (by this batcher and its copies).
  [[nodiscard]] std::size_t made_for(const Device& device) const {
    return (*made_)[static_cast<std::size_t>(device.id) % made_->size()];
  }

 private:
  std::shared_ptr<std::array<std::atomic<std::size_t>, 8>> made_;
};
// --8<-- [end:batcher]

}  // namespace tiny

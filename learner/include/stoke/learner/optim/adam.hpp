#pragma once
/// @file
/// `Adam`: Adam with bias correction and decoupled (AdamW-style) weight decay.

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include <Eigen/Core>

#include <stoke/core/error.hpp>
#include <stoke/learner/optim/optimizer.hpp>

namespace stoke {

/// Adam (Kingma and Ba) with decoupled weight decay (Loshchilov and Hutter's AdamW), as in
/// PyTorch's `AdamW`: at step `t` (from 1), `p *= 1 - lr * weight_decay`,
/// `m = beta1 m + (1 - beta1) g`, `v = beta2 v + (1 - beta2) g^2`,
/// `p -= lr * (m / (1 - beta1^t)) / (sqrt(v / (1 - beta2^t)) + epsilon)`.
/// Satisfies `ElementwiseOptimizer`.
class Adam {
 public:
  /// An optimizer with the given moment decay rates, epsilon and decoupled weight decay.
  explicit Adam(float beta1 = 0.9f, float beta2 = 0.999f, float epsilon = 1e-8f,
                float weight_decay = 0.0f) noexcept
      : beta1_(beta1), beta2_(beta2), epsilon_(epsilon), weight_decay_(weight_decay) {}

  /// Floats of `state()` before the per-parameter arrays (the step count, in two halves).
  static constexpr std::size_t state_header = 2;
  /// Per-parameter arrays in `state()`: the first and second moments.
  static constexpr std::size_t state_arrays = 2;

  /// Decay rate of the first moment.
  [[nodiscard]] float beta1() const noexcept { return beta1_; }
  /// Decay rate of the second moment.
  [[nodiscard]] float beta2() const noexcept { return beta2_; }
  /// Added to the root of the second moment.
  [[nodiscard]] float epsilon() const noexcept { return epsilon_; }
  /// Decoupled weight-decay factor (multiplied by the learning rate).
  [[nodiscard]] float weight_decay() const noexcept { return weight_decay_; }
  /// Number of steps taken so far.
  [[nodiscard]] std::uint64_t steps() const noexcept { return steps_; }

  /// One update of `parameters` from `gradients` at `learning_rate`.
  /// Throws `UsageError` if the sizes (or a loaded state's size) differ.
  void step(std::span<float> parameters, std::span<const float> gradients, float learning_rate) {
    const auto n = parameters.size();
    detail::check_optimizer_size("Adam", "gradient buffer", gradients.size(), n);
    if (first_.empty() && steps_ == 0) {
      first_.assign(n, 0.0f);
      second_.assign(n, 0.0f);
    }
    detail::check_optimizer_size("Adam", "moment state", first_.size(), n);
    ++steps_;
    const double t = static_cast<double>(steps_);
    const auto correction1 = static_cast<float>(1.0 - std::pow(static_cast<double>(beta1_), t));
    const auto root_correction2 =
        static_cast<float>(std::sqrt(1.0 - std::pow(static_cast<double>(beta2_), t)));
    const float decay = 1.0f - learning_rate * weight_decay_;
    // Eigen computes the elements of a span before its first aligned address and after its
    // last whole packet one at a time, and the rest in packets, and its packet square root
    // (rsqrt and a Newton step, under EIGEN_FAST_MATH) rounds otherwise than std::sqrt. So
    // that a parameter's update does not depend on where its span starts (a shard of the
    // sharded step starts anywhere; a rank steps the whole), every element is updated in
    // packets: a chunk at a time, copied into aligned scratch padded to whole blocks.
    alignas(kBlockBytes) float chunk_p[kChunk], chunk_m[kChunk], chunk_v[kChunk], chunk_g[kChunk];
    for (std::size_t begin = 0; begin < n; begin += kChunk) {
      const std::size_t count = std::min(kChunk, n - begin);
      const std::size_t padded = (count + kBlock - 1) / kBlock * kBlock;
      const auto load = [&](const float* from, float* to) {
        std::copy_n(from + begin, count, to);
        std::fill(to + count, to + padded, 0.0f);
      };
      load(parameters.data(), chunk_p);
      load(first_.data(), chunk_m);
      load(second_.data(), chunk_v);
      load(gradients.data(), chunk_g);
      const auto size = static_cast<Eigen::Index>(padded);
      using AlignedArray = Eigen::Map<Eigen::ArrayXf, Eigen::Aligned64>;
      AlignedArray p(chunk_p, size), m(chunk_m, size), v(chunk_v, size);
      const Eigen::Map<const Eigen::ArrayXf, Eigen::Aligned64> g(chunk_g, size);
      m = beta1_ * m + (1.0f - beta1_) * g;
      v = beta2_ * v + (1.0f - beta2_) * g.square();
      p = p * decay - learning_rate * (m / correction1) / (v.sqrt() / root_correction2 + epsilon_);
      std::copy_n(chunk_p, count, parameters.data() + begin);
      std::copy_n(chunk_m, count, first_.data() + begin);
      std::copy_n(chunk_v, count, second_.data() + begin);
    }
  }

  /// The whole state as floats: `{steps % 2^24, steps / 2^24, m..., v...}` (the step count
  /// split so that both halves are exact floats, also through a text format).
  [[nodiscard]] std::vector<float> state() const {
    std::vector<float> out;
    out.reserve(2 + first_.size() + second_.size());
    out.push_back(static_cast<float>(steps_ % kStepRadix));
    out.push_back(static_cast<float>(steps_ / kStepRadix));
    out.insert(out.end(), first_.begin(), first_.end());
    out.insert(out.end(), second_.begin(), second_.end());
    return out;
  }
  /// Restores a state from `state()`. Throws `UsageError` if it is malformed.
  void load_state(std::span<const float> state) {
    if (state.size() < 2 || state.size() % 2 != 0) {
      throw UsageError("Adam: a state has 2 + 2n floats, got " + std::to_string(state.size()));
    }
    const auto whole = [](float f) {
      return f >= 0.0f && f < static_cast<float>(kStepRadix) && std::floor(f) == f;
    };
    if (!whole(state[0]) || !whole(state[1])) {
      throw UsageError("Adam: the state's step count is not a whole number");
    }
    const auto n = (state.size() - 2) / 2;
    steps_ =
        static_cast<std::uint64_t>(state[1]) * kStepRadix + static_cast<std::uint64_t>(state[0]);
    first_.assign(state.begin() + 2, state.begin() + 2 + static_cast<std::ptrdiff_t>(n));
    second_.assign(state.begin() + 2 + static_cast<std::ptrdiff_t>(n), state.end());
  }

 private:
  static constexpr std::uint64_t kStepRadix = std::uint64_t{1} << 24;
  /// Floats in a block: a whole number of packets for every SIMD width Eigen uses for floats.
  static constexpr std::size_t kBlock = 16;
  static constexpr std::size_t kBlockBytes = kBlock * sizeof(float);  ///< 64: AVX-512's packet
  /// Floats updated at a time in aligned scratch (four arrays of 4 KiB: in L1).
  static constexpr std::size_t kChunk = 1024;

  float beta1_;
  float beta2_;
  float epsilon_;
  float weight_decay_;
  std::uint64_t steps_ = 0;
  std::vector<float> first_;   // m
  std::vector<float> second_;  // v
};

}  // namespace stoke

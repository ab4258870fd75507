#pragma once
/// @file
/// `Adam`: Adam with bias correction and decoupled (AdamW-style) weight decay.

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include <stoke/core/error.hpp>
#include <stoke/learner/kernels/exact_arithmetic.hpp>
#include <stoke/learner/optim/optimizer.hpp>

namespace stoke {

/// What one Adam step multiplies and adds, computed once a step (the corrections in double,
/// as `Adam::step` does).
struct AdamStepFactors {
  float beta1;             ///< first-moment decay
  float beta2;             ///< second-moment decay
  float epsilon;           ///< added to the root of the second moment
  float decay;             ///< `1 - learning_rate * weight_decay`
  float learning_rate;     ///< this step's rate
  float correction1;       ///< `1 - beta1^t`
  float root_correction2;  ///< `sqrt(1 - beta2^t)`
};

/// Adam's update of `count` elements (a whole number of `F`s: `float` or `exact::Packet`),
/// every operation rounded on its own (IEEE square root, nothing fused), in this order:
/// ```
/// m = (beta1 * m) + ((1 - beta1) * g)
/// v = (beta2 * v) + ((1 - beta2) * (g * g))
/// p = (p * decay) - ((lr * (m / c1)) / ((sqrt(v) / rc2) + epsilon))
/// ```
/// So the result does not depend on the instruction set, the packet width or where a span
/// starts; the CUDA kernel (backends/cuda/src/training.cu) takes the same operations in the
/// same order and equals it bit for bit.
template <class F>
void adam_update(std::size_t count, const AdamStepFactors& factors, float* parameters, float* first,
                 float* second, const float* gradients) noexcept {
  const F beta1 = exact::splat<F>(factors.beta1);
  const F rest1 = exact::splat<F>(1.0f - factors.beta1);
  const F beta2 = exact::splat<F>(factors.beta2);
  const F rest2 = exact::splat<F>(1.0f - factors.beta2);
  const F epsilon = exact::splat<F>(factors.epsilon);
  const F decay = exact::splat<F>(factors.decay);
  const F rate = exact::splat<F>(factors.learning_rate);
  const F correction1 = exact::splat<F>(factors.correction1);
  const F root_correction2 = exact::splat<F>(factors.root_correction2);
  for (std::size_t i = 0; i < count; i += exact::width<F>) {
    const F g = exact::load<F>(gradients + i);
    const F m = exact::add(exact::mul(beta1, exact::load<F>(first + i)), exact::mul(rest1, g));
    const F v = exact::add(exact::mul(beta2, exact::load<F>(second + i)),
                           exact::mul(rest2, exact::mul(g, g)));
    const F change = exact::div(exact::mul(rate, exact::div(m, correction1)),
                                exact::add(exact::div(exact::sqrt(v), root_correction2), epsilon));
    exact::store(parameters + i,
                 exact::sub(exact::mul(exact::load<F>(parameters + i), decay), change));
    exact::store(first + i, m);
    exact::store(second + i, v);
  }
}

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
    const AdamStepFactors factors{
        .beta1 = beta1_,
        .beta2 = beta2_,
        .epsilon = epsilon_,
        .decay = exact::sub(1.0f, exact::mul(learning_rate, weight_decay_)),
        .learning_rate = learning_rate,
        .correction1 = correction1,
        .root_correction2 = root_correction2};
    // Whole packets, then the last few elements one at a time: each rounds as the other.
    const std::size_t whole = exact::whole_packets(n);
    float* p = parameters.data();
    float* m = first_.data();
    float* v = second_.data();
    const float* g = gradients.data();
    adam_update<exact::Packet>(whole, factors, p, m, v, g);
    adam_update<float>(n - whole, factors, p + whole, m + whole, v + whole, g + whole);
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

  float beta1_;
  float beta2_;
  float epsilon_;
  float weight_decay_;
  std::uint64_t steps_ = 0;
  std::vector<float> first_;   // m
  std::vector<float> second_;  // v
};

}  // namespace stoke

#pragma once
/// @file
/// `Sgd`: stochastic gradient descent with classic momentum and L2 weight decay.

#include <cstddef>
#include <span>
#include <vector>

#include <stoke/learner/kernels/exact_arithmetic.hpp>
#include <stoke/learner/optim/optimizer.hpp>

namespace stoke {

/// SGD's update of `count` elements (a whole number of `F`s: `float` or `exact::Packet`),
/// every operation rounded on its own (nothing fused), in this order:
/// ```
/// v = (momentum * v) + (g + (weight_decay * p))
/// p = p - (lr * v)
/// ```
/// So the result does not depend on the instruction set, the packet width or where a span
/// starts; the CUDA kernel (backends/cuda/src/training.cu) takes the same operations in the
/// same order.
template <class F>
void sgd_update(std::size_t count, float momentum, float weight_decay, float learning_rate,
                float* parameters, float* velocity, const float* gradients) noexcept {
  const F decay = exact::splat<F>(momentum);
  const F l2 = exact::splat<F>(weight_decay);
  const F rate = exact::splat<F>(learning_rate);
  for (std::size_t i = 0; i < count; i += exact::width<F>) {
    const F p = exact::load<F>(parameters + i);
    const F v = exact::add(exact::mul(decay, exact::load<F>(velocity + i)),
                           exact::add(exact::load<F>(gradients + i), exact::mul(l2, p)));
    exact::store(velocity + i, v);
    exact::store(parameters + i, exact::sub(p, exact::mul(rate, v)));
  }
}

/// Stochastic gradient descent with classic (heavy-ball) momentum, as in PyTorch's `SGD`:
/// `g' = g + weight_decay * p`, `v = momentum * v + g'`, `p -= learning_rate * v`, with the
/// velocity `v` starting at zero. Satisfies `ElementwiseOptimizer`.
class Sgd {
 public:
  /// An optimizer with the given base learning rate (used by the two-argument `step`),
  /// momentum and weight decay (added to the gradient, L2-style).
  explicit Sgd(float learning_rate, float momentum = 0.0f, float weight_decay = 0.0f) noexcept
      : learning_rate_(learning_rate), momentum_(momentum), weight_decay_(weight_decay) {}

  /// Floats of `state()` before the per-parameter arrays: none.
  static constexpr std::size_t state_header = 0;
  /// Per-parameter arrays in `state()`: the velocity.
  static constexpr std::size_t state_arrays = 1;

  /// The base learning rate given at construction.
  [[nodiscard]] float learning_rate() const noexcept { return learning_rate_; }
  /// The momentum factor.
  [[nodiscard]] float momentum() const noexcept { return momentum_; }
  /// The L2 weight-decay factor.
  [[nodiscard]] float weight_decay() const noexcept { return weight_decay_; }

  /// One update of `parameters` from `gradients` at `learning_rate`.
  /// Throws `UsageError` if the sizes (or a loaded state's size) differ.
  void step(std::span<float> parameters, std::span<const float> gradients, float learning_rate) {
    detail::check_optimizer_size("Sgd", "gradient buffer", gradients.size(), parameters.size());
    if (velocity_.empty()) velocity_.assign(parameters.size(), 0.0f);
    detail::check_optimizer_size("Sgd", "velocity state", velocity_.size(), parameters.size());
    // Whole packets, then the last few elements one at a time: each rounds as the other.
    const std::size_t whole = exact::whole_packets(parameters.size());
    float* p = parameters.data();
    float* v = velocity_.data();
    const float* g = gradients.data();
    sgd_update<exact::Packet>(whole, momentum_, weight_decay_, learning_rate, p, v, g);
    sgd_update<float>(parameters.size() - whole, momentum_, weight_decay_, learning_rate, p + whole,
                      v + whole, g + whole);
  }
  /// One update at the base learning rate.
  void step(std::span<float> parameters, std::span<const float> gradients) {
    step(parameters, gradients, learning_rate_);
  }

  /// The velocity, one float per parameter (empty before the first step).
  [[nodiscard]] std::vector<float> state() const { return velocity_; }
  /// Restores a velocity from `state()`.
  void load_state(std::span<const float> state) { velocity_.assign(state.begin(), state.end()); }

 private:
  float learning_rate_;
  float momentum_;
  float weight_decay_;
  std::vector<float> velocity_;
};

}  // namespace stoke

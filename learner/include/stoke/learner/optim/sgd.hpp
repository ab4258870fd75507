#pragma once
/// @file
/// `Sgd`: stochastic gradient descent with classic momentum and L2 weight decay.

#include <cstddef>
#include <span>
#include <vector>

#include <Eigen/Core>

#include <stoke/learner/optim/optimizer.hpp>

namespace stoke {

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
    const auto size = static_cast<Eigen::Index>(parameters.size());
    Eigen::Map<Eigen::ArrayXf> p(parameters.data(), size), v(velocity_.data(), size);
    const Eigen::Map<const Eigen::ArrayXf> g(gradients.data(), size);
    v = momentum_ * v + (g + weight_decay_ * p);
    p -= learning_rate * v;
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

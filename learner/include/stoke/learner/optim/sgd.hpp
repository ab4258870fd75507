#pragma once
/// @file
/// `Sgd`: stochastic gradient descent with classic momentum and L2 weight decay.

#include <cstddef>
#include <span>
#include <vector>

#include <stoke/learner/optim/optimizer.hpp>

namespace stoke {

/// Stochastic gradient descent with classic (heavy-ball) momentum, as in PyTorch's `SGD`:
/// `g' = g + weight_decay * p`, `v = momentum * v + g'`, `p -= learning_rate * v`, with the
/// velocity `v` starting at zero. Satisfies `Optimizer`.
class Sgd {
 public:
  /// An optimizer with the given base learning rate (used by the two-argument `step`),
  /// momentum and weight decay (added to the gradient, L2-style).
  explicit Sgd(float learning_rate, float momentum = 0.0f, float weight_decay = 0.0f) noexcept
      : learning_rate_(learning_rate), momentum_(momentum), weight_decay_(weight_decay) {}

  /// The base learning rate given at construction.
  [[nodiscard]] float learning_rate() const noexcept { return learning_rate_; }
  /// The momentum factor.
  [[nodiscard]] float momentum() const noexcept { return momentum_; }
  /// The L2 weight-decay factor.
  [[nodiscard]] float weight_decay() const noexcept { return weight_decay_; }

  /// One update of `parameters` from `gradients` at `learning_rate`.
  /// Throws `std::invalid_argument` if the sizes (or a loaded state's size) differ.
  void step(std::span<float> parameters, std::span<const float> gradients, float learning_rate) {
    detail::check_optimizer_size("Sgd", "gradient buffer", gradients.size(), parameters.size());
    if (velocity_.empty()) velocity_.assign(parameters.size(), 0.0f);
    detail::check_optimizer_size("Sgd", "velocity state", velocity_.size(), parameters.size());
    for (std::size_t i = 0; i < parameters.size(); ++i) {
      const float g = gradients[i] + weight_decay_ * parameters[i];
      velocity_[i] = momentum_ * velocity_[i] + g;
      parameters[i] -= learning_rate * velocity_[i];
    }
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

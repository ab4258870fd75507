#pragma once
/// @file
/// The `Optimizer` concept: what updates a flat parameter buffer from a gradient buffer.

#include <concepts>
#include <cstddef>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

namespace stoke {

/// Updates parameters from gradients, keeping its own state (momenta, step counters).
///
/// Requirements:
/// 1. `o.step(parameters, gradients, learning_rate)` updates `parameters` in place from
///    `gradients` (same size) at the given learning rate (the caller owns the schedule);
///    sizes that do not match throw `std::invalid_argument` naming both;
/// 2. `o.state()` is the optimizer's whole state as a `std::vector<float>`, for checkpoints;
/// 3. `o.load_state(state)` restores it, so the next steps continue exactly as they would
///    have; a state of the wrong size for the parameters is refused at the next `step`.
template <class O>
concept Optimizer = std::copy_constructible<O> &&
    requires(O& optimizer, const O& const_optimizer, std::span<float> parameters,
             std::span<const float> gradients, float learning_rate,
             const std::vector<float>& state) {
  optimizer.step(parameters, gradients, learning_rate);
  { const_optimizer.state() } -> std::convertible_to<std::vector<float>>;
  optimizer.load_state(state);
};

namespace detail {

/// Throws `std::invalid_argument` unless `what` has as many floats as the parameters.
inline void check_optimizer_size(const char* optimizer, const char* what, std::size_t size,
                                 std::size_t parameters) {
  if (size != parameters) {
    throw std::invalid_argument(std::string(optimizer) + ": " + what + " has " +
                                std::to_string(size) + " floats, the parameters have " +
                                std::to_string(parameters));
  }
}

}  // namespace detail

}  // namespace stoke

#pragma once
/// @file
/// The `Optimizer` concept: what updates a flat parameter buffer from a gradient buffer.

#include <concepts>
#include <cstddef>
#include <span>
#include <string>
#include <vector>

#include <stoke/core/error.hpp>

namespace stoke {

/// Updates parameters from gradients, keeping its own state (momenta, step counters).
///
/// Requirements:
/// 1. `o.step(parameters, gradients, learning_rate)` updates `parameters` in place from
///    `gradients` (same size) at the given learning rate (the caller owns the schedule);
///    sizes that do not match throw `UsageError` naming both;
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

/// An optimizer whose update of a parameter depends only on that parameter, its gradient and
/// its own state, so a slice of the parameters can be stepped alone: the learner shards the
/// optimizer step over the devices (each steps its slice, then the slices are all-gathered).
///
/// Requirements:
/// 1. `O` models `Optimizer`;
/// 2. `o.state()` is `O::state_header` floats of state shared by all parameters (e.g. a
///    step count) followed by `O::state_arrays` arrays of one float per parameter stepped
///    (none before the first step);
/// 3. stepping slices of the parameters with optimizers loaded from the matching slices of a
///    state gives, slice by slice, what stepping the whole does (up to the rounding of vectorised
///    math: Eigen's packet
/// square root, which `Adam` uses, may differ from the scalar one in the last bit, and which
/// elements take the packet path depends on where a slice starts).
template <class O>
concept ElementwiseOptimizer = Optimizer<O> && requires {
  { O::state_header } -> std::convertible_to<std::size_t>;
  { O::state_arrays } -> std::convertible_to<std::size_t>;
};

namespace detail {

/// Throws `UsageError` unless `what` has as many floats as the parameters.
inline void check_optimizer_size(const char* optimizer, const char* what, std::size_t size,
                                 std::size_t parameters) {
  if (size != parameters) {
    throw UsageError(std::string(optimizer) + ": " + what + " has " + std::to_string(size) +
                     " floats, the parameters have " + std::to_string(parameters));
  }
}

}  // namespace detail

}  // namespace stoke

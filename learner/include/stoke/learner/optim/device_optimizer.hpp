#pragma once
/// @file
/// `DeviceOptimizer`: an element-wise optimizer that a `DeviceBackend` steps in device memory
/// (`Sgd` and `Adam`), and how its host state maps onto device state tensors.

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include <stoke/core/device_training.hpp>
#include <stoke/learner/device_backend.hpp>
#include <stoke/learner/optim/adam.hpp>
#include <stoke/learner/optim/optimizer.hpp>
#include <stoke/learner/optim/sgd.hpp>

namespace stoke {

/// How an optimizer steps on a device. Specialised for each optimizer that has device kernels.
template <class O>
struct DeviceOptimizerTraits;

/// `Sgd` on a device: one state tensor, the velocity.
template <>
struct DeviceOptimizerTraits<Sgd> {
  /// The `steps` of a state (SGD does not count them).
  static std::uint64_t steps(const Sgd&) noexcept { return 0; }
  /// The state's header for `steps` steps (none).
  static std::vector<float> header(std::uint64_t) { return {}; }
  /// Enqueues one step; `state` holds the velocity of the stepped shard.
  template <DeviceBackend B>
  static void step(const Sgd& sgd, std::uint64_t, const OptimizerStepShape& shape,
                   typename B::Tensor& parameters, std::span<typename B::Tensor> state,
                   typename B::Tensor& reduced, typename B::Tensor& history) {
    B::sgd_step(SgdHyperparameters{sgd.momentum(), sgd.weight_decay()}, shape, parameters, state[0],
                reduced, history);
  }
};

/// `Adam` on a device: two state tensors, the moments; the step count stays on the host.
template <>
struct DeviceOptimizerTraits<Adam> {
  /// The steps `adam` has taken.
  static std::uint64_t steps(const Adam& adam) noexcept { return adam.steps(); }
  /// The state's header for `steps` steps (as `Adam::state` writes it).
  static std::vector<float> header(std::uint64_t steps) {
    constexpr std::uint64_t radix = std::uint64_t{1} << 24;
    return {static_cast<float>(steps % radix), static_cast<float>(steps / radix)};
  }
  /// Enqueues step number `step` (from 1); `state` holds the moments of the stepped shard.
  template <DeviceBackend B>
  static void step(const Adam& adam, std::uint64_t step, const OptimizerStepShape& shape,
                   typename B::Tensor& parameters, std::span<typename B::Tensor> state,
                   typename B::Tensor& reduced, typename B::Tensor& history) {
    B::adam_step(
        AdamHyperparameters{adam.beta1(), adam.beta2(), adam.epsilon(), adam.weight_decay(), step},
        shape, parameters, state[0], state[1], reduced, history);
  }
};

/// A device optimizer: an element-wise optimizer with device kernels.
///
/// Requirements:
/// 1. `O` models `ElementwiseOptimizer`;
/// 2. `DeviceOptimizerTraits<O>` is defined: `steps(o)` is the optimizer's step count and
///    `header(steps)` the state header for that count, so the device state round-trips
///    through `o.state()`;
/// 3. its `step` runs the backend's kernel on a shard (see `DeviceBackend`).
template <class O>
concept DeviceOptimizer = ElementwiseOptimizer<O> && requires(const O& optimizer) {
  { DeviceOptimizerTraits<O>::steps(optimizer) } -> std::convertible_to<std::uint64_t>;
  { DeviceOptimizerTraits<O>::header(std::uint64_t{}) } -> std::same_as<std::vector<float>>;
};

}  // namespace stoke

#pragma once
/// @file
/// `DeviceOptimizer`: an element-wise optimizer that a `DeviceBackend` steps in device memory
/// (`Sgd` and `Adam`), and how its host state maps onto device state tensors.

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include <stoke/learner/device_backend.hpp>
#include <stoke/learner/kernels/device_training.hpp>
#include <stoke/learner/kernels/device_training_checks.hpp>
#include <stoke/learner/kernels/step_table.hpp>
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
  /// The step table's row of a step at `learning_rate` (SGD changes nothing else).
  static StepScalars scalars(const Sgd&, std::uint64_t, float learning_rate) noexcept {
    return StepScalars{.learning_rate = learning_rate};
  }
  /// Enqueues one step; `state` holds the velocity of the stepped shard. With a step `table`
  /// the rate and the history slot are read there on the device.
  template <DeviceBackend B>
  static void step(const Sgd& sgd, std::uint64_t, const OptimizerStepShape& shape,
                   typename B::Tensor& parameters, std::span<typename B::Tensor> state,
                   typename B::Tensor& reduced, typename B::Tensor& history,
                   const typename B::Tensor* table = nullptr) {
    const SgdHyperparameters hyper{sgd.momentum(), sgd.weight_decay()};
    if (table != nullptr) {
      B::sgd_step(hyper, shape, parameters, state[0], reduced, history, *table);
    } else {
      B::sgd_step(hyper, shape, parameters, state[0], reduced, history);
    }
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
  /// The step table's row of step number `step` (from 1) at `learning_rate`: the decay and
  /// the bias corrections as the kernels' arguments would hold them (`detail::adam_factors`).
  static StepScalars scalars(const Adam& adam, std::uint64_t step, float learning_rate) {
    const detail::AdamFactors factors =
        detail::adam_factors(hyperparameters(adam, step), learning_rate);
    return {learning_rate, factors.decay, factors.correction1, factors.root_correction2};
  }
  /// Enqueues step number `step` (from 1); `state` holds the moments of the stepped shard.
  /// With a step `table` the rate, the decay, the bias corrections and the history slot are
  /// read there on the device.
  template <DeviceBackend B>
  static void step(const Adam& adam, std::uint64_t step, const OptimizerStepShape& shape,
                   typename B::Tensor& parameters, std::span<typename B::Tensor> state,
                   typename B::Tensor& reduced, typename B::Tensor& history,
                   const typename B::Tensor* table = nullptr) {
    const AdamHyperparameters hyper = hyperparameters(adam, step);
    if (table != nullptr) {
      B::adam_step(hyper, shape, parameters, state[0], state[1], reduced, history, *table);
    } else {
      B::adam_step(hyper, shape, parameters, state[0], state[1], reduced, history);
    }
  }

 private:
  static AdamHyperparameters hyperparameters(const Adam& adam, std::uint64_t step) noexcept {
    return {adam.beta1(), adam.beta2(), adam.epsilon(), adam.weight_decay(), step};
  }
};

/// A device optimizer: an element-wise optimizer with device kernels.
///
/// Requirements:
/// 1. `O` models `ElementwiseOptimizer`;
/// 2. `DeviceOptimizerTraits<O>` is defined: `steps(o)` is the optimizer's step count and
///    `header(steps)` the state header for that count, so the device state round-trips
///    through `o.state()`;
/// 3. `scalars(o, step, rate)` is the step table's row of step number `step` at `rate`;
/// 4. its `step` runs the backend's kernel on a shard (see `DeviceBackend`), with its scalars
///    from the step table where it is given one.
template <class O>
concept DeviceOptimizer = ElementwiseOptimizer<O> && requires(const O& optimizer) {
  { DeviceOptimizerTraits<O>::steps(optimizer) } -> std::convertible_to<std::uint64_t>;
  { DeviceOptimizerTraits<O>::header(std::uint64_t{}) } -> std::same_as<std::vector<float>>;
  {
    DeviceOptimizerTraits<O>::scalars(optimizer, std::uint64_t{}, 0.0f)
  } -> std::same_as<StepScalars>;
};

}  // namespace stoke

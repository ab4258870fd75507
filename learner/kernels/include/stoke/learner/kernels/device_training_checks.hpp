#pragma once
/// @file
/// The argument checks every backend's training kernels make (see `device_training.hpp`), so
/// that CUDA and Vulkan refuse the same calls with the same messages, naming the backend. A
/// model's own kernels add theirs beside them (`softmax_classifier.hpp`).

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>

#include <stoke/core/error.hpp>
#include <stoke/learner/kernels/device_training.hpp>
#include <stoke/learner/kernels/exact_arithmetic.hpp>
#include <stoke/learner/kernels/step_table.hpp>

namespace stoke::detail {

/// The 32-bit value of a size a kernel indexes with; throws `UsageError` naming
/// `backend` and `what` when it does not fit.
inline std::uint32_t kernel_index(std::string_view backend, std::size_t value, const char* what) {
  if (value > 0xFFFFFFFFu) {
    throw UsageError("stoke: " + std::string(backend) + ": " + what + " of " +
                     std::to_string(value) + " exceeds a kernel's 32-bit index");
  }
  return static_cast<std::uint32_t>(value);
}

/// Throws `UsageError` unless a tensor of `bytes` bytes holds `floats` floats.
inline void require_floats(std::string_view backend, std::size_t bytes, std::size_t floats,
                           const char* what) {
  if (bytes < floats * sizeof(float)) {
    throw UsageError("stoke: " + std::string(backend) + ": " + what + " holds " +
                     std::to_string(bytes / sizeof(float)) + " floats, the step needs " +
                     std::to_string(floats));
  }
}

/// An optimizer step's sizes as the kernels take them.
struct OptimizerStepSizes {
  std::uint32_t parameters, begin, size, history_slot;
};

/// `step`'s sizes; throws `UsageError` for one that does not fit the kernels.
inline OptimizerStepSizes optimizer_step_sizes(std::string_view backend,
                                               const OptimizerStepShape& step) {
  return {kernel_index(backend, step.parameters, "a parameter count"),
          kernel_index(backend, step.begin, "a shard"), kernel_index(backend, step.size, "a shard"),
          kernel_index(backend, step.history_slot, "a step index")};
}

/// Checks an optimizer step's tensors (every tensor holds what `step` reads or writes; `state`
/// names each state tensor) and returns the step's sizes.
template <class Tensor>
OptimizerStepSizes checked_optimizer_step(
    std::string_view backend, const OptimizerStepShape& step, const Tensor& parameters,
    std::initializer_list<std::pair<const Tensor*, const char*>> state, const Tensor& reduced,
    const Tensor& history) {
  require_floats(backend, parameters.size(), step.begin + step.size, "the parameter tensor");
  for (const auto& [tensor, name] : state) require_floats(backend, tensor->size(), step.size, name);
  require_floats(backend, reduced.size(), step.parameters + reduced_tail, "the reduced tensor");
  require_floats(backend, history.size(), reduced_tail * (step.history_slot + 1),
                 "the history tensor");
  return optimizer_step_sizes(backend, step);
}

/// `checked_optimizer_step` of an SGD step, whose parameter shard state is `velocity`.
template <class Tensor>
OptimizerStepSizes checked_sgd_step(std::string_view backend, const OptimizerStepShape& step,
                                    const Tensor& parameters, const Tensor& velocity,
                                    const Tensor& reduced, const Tensor& history) {
  return checked_optimizer_step(backend, step, parameters, {{&velocity, "the velocity tensor"}},
                                reduced, history);
}

/// `checked_optimizer_step` of an Adam step, whose parameter shard state is `first` and `second`.
template <class Tensor>
OptimizerStepSizes checked_adam_step(std::string_view backend, const OptimizerStepShape& step,
                                     const Tensor& parameters, const Tensor& first,
                                     const Tensor& second, const Tensor& reduced,
                                     const Tensor& history) {
  return checked_optimizer_step(
      backend, step, parameters,
      {{&first, "the first-moment tensor"}, {&second, "the second-moment tensor"}}, reduced,
      history);
}

/// Throws `UsageError` unless `table` holds the step table's row of step `step.history_slot`
/// (the step reads its scalars there, see `step_table.hpp`).
template <class Tensor>
void check_step_table(std::string_view backend, const OptimizerStepShape& step,
                      const Tensor& table) {
  require_floats(backend, table.size(), step_table_floats(step.history_slot + 1), "the step table");
}

/// Adam's factors of one step: the decoupled decay `1 - lr weight_decay` and the bias
/// corrections `1 - beta1^t` and `sqrt(1 - beta2^t)`, computed in double as `stoke::Adam` does.
struct AdamFactors {
  float beta1, beta2, epsilon, decay, correction1, root_correction2;
};

/// The factors of step `hyper.step` at `learning_rate`.
inline AdamFactors adam_factors(const AdamHyperparameters& hyper, float learning_rate) {
  const double t = static_cast<double>(hyper.step);
  return {hyper.beta1,
          hyper.beta2,
          hyper.epsilon,
          exact::sub(1.0f, exact::mul(learning_rate, hyper.weight_decay)),  // as stoke::Adam
          static_cast<float>(1.0 - std::pow(static_cast<double>(hyper.beta1), t)),
          static_cast<float>(std::sqrt(1.0 - std::pow(static_cast<double>(hyper.beta2), t)))};
}

}  // namespace stoke::detail

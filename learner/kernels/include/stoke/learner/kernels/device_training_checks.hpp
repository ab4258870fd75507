#pragma once
/// @file
/// The argument checks every backend's training kernels make (see `device_training.hpp`), so
/// that CUDA and Vulkan refuse the same calls with the same messages, naming the backend.

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

/// A softmax batch's sizes as the kernels take them.
struct SoftmaxSizes {
  std::uint32_t rows, real_rows, features, classes;
};

/// `shape`'s sizes; throws `UsageError` for a shape the kernels do not take.
inline SoftmaxSizes softmax_sizes(std::string_view backend, const SoftmaxShape& shape) {
  if (shape.classes == 0 || shape.classes > max_softmax_classes) {
    throw UsageError("stoke: " + std::string(backend) + ": a softmax classifier of " +
                     std::to_string(shape.classes) + " classes (1 to " +
                     std::to_string(max_softmax_classes) + " are supported)");
  }
  if (shape.real_rows > shape.rows) {
    throw UsageError("stoke: " + std::string(backend) + ": a batch of " +
                     std::to_string(shape.rows) + " rows cannot have " +
                     std::to_string(shape.real_rows) + " real ones");
  }
  return {kernel_index(backend, shape.rows, "a batch"),
          kernel_index(backend, shape.real_rows, "a batch"),
          kernel_index(backend, shape.features, "a feature count"),
          kernel_index(backend, shape.classes, "a class count")};
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

/// Throws `UsageError` unless `real_rows` holds a batch's real-row count (one 32-bit word).
template <class Tensor>
void check_real_rows(std::string_view backend, const Tensor& real_rows) {
  require_floats(backend, real_rows.size(), 1, "the real-row tensor");
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

/// Checks a softmax forward pass's tensors and returns the batch's sizes.
template <class Tensor>
SoftmaxSizes checked_softmax_forward(std::string_view backend, const SoftmaxShape& shape,
                                     const Tensor& inputs, const Tensor& labels,
                                     const Tensor& parameters, const Tensor& dlogits,
                                     const Tensor& item_stats) {
  const SoftmaxSizes sizes = softmax_sizes(backend, shape);
  require_floats(backend, inputs.size(), shape.rows * shape.features, "the input tensor");
  require_floats(backend, labels.size(), shape.rows, "the label tensor");
  require_floats(backend, parameters.size(), shape.features * shape.classes + shape.classes,
                 "the parameter tensor");
  require_floats(backend, dlogits.size(), shape.rows * shape.classes, "the logit-gradient tensor");
  require_floats(backend, item_stats.size(), shape.rows * 2, "the item-statistics tensor");
  return sizes;
}

/// Checks the tensors of a softmax batch's gradient sums and returns the batch's sizes.
template <class Tensor>
SoftmaxSizes checked_softmax_gradients(std::string_view backend, const SoftmaxShape& shape,
                                       const Tensor& inputs, const Tensor& dlogits,
                                       const Tensor& item_stats, const Tensor& reduced) {
  const SoftmaxSizes sizes = softmax_sizes(backend, shape);
  require_floats(backend, inputs.size(), shape.real_rows * shape.features, "the input tensor");
  require_floats(backend, dlogits.size(), shape.real_rows * shape.classes,
                 "the logit-gradient tensor");
  require_floats(backend, item_stats.size(), shape.real_rows * 2, "the item-statistics tensor");
  require_floats(backend, reduced.size(),
                 shape.features * shape.classes + shape.classes + reduced_tail,
                 "the reduced tensor");
  return sizes;
}

/// Checks the tensors of a softmax batch's validation sums and returns the batch's sizes.
template <class Tensor>
SoftmaxSizes checked_softmax_sums(std::string_view backend, const SoftmaxShape& shape,
                                  const Tensor& item_stats, const Tensor& sums) {
  const SoftmaxSizes sizes = softmax_sizes(backend, shape);
  require_floats(backend, item_stats.size(), shape.real_rows * 2, "the item-statistics tensor");
  require_floats(backend, sums.size(), reduced_tail, "the sums tensor");
  return sizes;
}

}  // namespace stoke::detail

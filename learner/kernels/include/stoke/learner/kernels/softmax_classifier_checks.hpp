#pragma once
/// @file
/// The argument checks every backend's softmax classifier kernels make (see
/// `softmax_classifier.hpp`), so that CUDA and Vulkan refuse the same calls with the same
/// messages, naming the backend.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include <stoke/core/error.hpp>
#include <stoke/learner/kernels/device_training.hpp>
#include <stoke/learner/kernels/device_training_checks.hpp>
#include <stoke/learner/kernels/softmax_classifier.hpp>

namespace stoke {

namespace detail {

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

/// Throws `UsageError` unless `real_rows` holds a batch's real-row count (one 32-bit word).
template <class Tensor>
void check_real_rows(std::string_view backend, const Tensor& real_rows) {
  require_floats(backend, real_rows.size(), 1, "the real-row tensor");
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

}  // namespace detail

}  // namespace stoke

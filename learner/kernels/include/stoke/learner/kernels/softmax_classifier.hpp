#pragma once
/// @file
/// The softmax classifier's kernels (`stoke::SoftmaxClassifier`): the shape of its batch and
/// `SoftmaxKernels<Tensor>`, which a backend that runs the model specializes for its tensors
/// beside its kernels
/// (`cuda/softmax_classifier.hpp`, `vulkan/softmax_classifier.hpp`). They are the model's, not
/// every device model's: a new model brings its own such headers and its own kernels, and leaves
/// `DeviceBackend` and the backends' shared training headers as they are.

#include <cstddef>

#include <stoke/learner/kernels/device_training.hpp>

namespace stoke {

/// One batch of a softmax classifier (logits `x W + b`, `W` a `features x classes` row-major
/// matrix followed by `classes` biases in the parameters, as `stoke::Mlp({features,
/// classes})` lays them out). The first `real_rows` rows are real items; the rest are padding
/// and contribute nothing.
struct SoftmaxShape {
  std::size_t rows = 0;       ///< items in the batch
  std::size_t real_rows = 0;  ///< items that are not padding
  std::size_t features = 0;   ///< inputs per item
  std::size_t classes = 0;    ///< outputs per item (at most `max_softmax_classes`)
};

/// The most classes the device softmax kernels take.
inline constexpr std::size_t max_softmax_classes = 32;

/// The softmax classifier's kernels on `Tensor`s (a backend's `B::Tensor`: on one device, each
/// queued as `DeviceBackend` operations are, in call order, without waiting). Keyed by the
/// tensor type, not the backend, so a backend derived from another (a test's wrapper) runs
/// the same kernels. A backend that runs the model specializes it with these static members:
///
/// - `forward(shape, inputs, labels, parameters, dlogits, item_stats)`: per-item gradients of
///   the loss by the logits (`rows x classes`) and per-item loss and correctness (`rows x 2`);
///   `labels` holds one `int32` a row;
/// - `gradients(shape, inputs, dlogits, item_stats, reduced)`: the gradient sums and the
///   step's sums into the reduced tensor;
/// - `add_sums(shape, item_stats, sums)`: adds the batch's loss sum, real-item count and
///   correct count to `sums` (3 floats);
/// - each of them also with a last argument `real_rows`, a tensor of one `uint32` holding the
///   batch's real rows, read on the device (`shape.real_rows` then only checks the sizes), so a
///   padded batch takes the same arguments as a full one.
///
/// Every backend refuses the same arguments with the same messages
/// (`softmax_classifier_checks.hpp`).
template <class Tensor>
struct SoftmaxKernels;

/// `SoftmaxKernels`' six members from a backend's three (`Launch::forward`,
/// `Launch::gradients`, `Launch::add_sums`), which take the real-row tensor last as a pointer
/// (null: the count is `shape.real_rows`): a backend's specialization derives from it, so the
/// overloads are written once for every backend.
template <class Launch, class Tensor>
struct SoftmaxOverloads {
  /// Per-item gradients of the loss by the logits and per-item loss and correctness.
  static void forward(const SoftmaxShape& shape, const Tensor& inputs, const Tensor& labels,
                      const Tensor& parameters, Tensor& dlogits, Tensor& item_stats) {
    Launch::forward(shape, inputs, labels, parameters, dlogits, item_stats, nullptr);
  }
  /// `forward` reading the real rows from `real_rows` (one `uint32`) on the device.
  static void forward(const SoftmaxShape& shape, const Tensor& inputs, const Tensor& labels,
                      const Tensor& parameters, Tensor& dlogits, Tensor& item_stats,
                      const Tensor& real_rows) {
    Launch::forward(shape, inputs, labels, parameters, dlogits, item_stats, &real_rows);
  }
  /// The gradient sums and the step's sums into the reduced tensor.
  static void gradients(const SoftmaxShape& shape, const Tensor& inputs, const Tensor& dlogits,
                        const Tensor& item_stats, Tensor& reduced) {
    Launch::gradients(shape, inputs, dlogits, item_stats, reduced, nullptr);
  }
  /// `gradients` reading the real rows from `real_rows` (one `uint32`) on the device.
  static void gradients(const SoftmaxShape& shape, const Tensor& inputs, const Tensor& dlogits,
                        const Tensor& item_stats, Tensor& reduced, const Tensor& real_rows) {
    Launch::gradients(shape, inputs, dlogits, item_stats, reduced, &real_rows);
  }
  /// Adds the batch's loss sum, real-item count and correct count to `sums` (3 floats).
  static void add_sums(const SoftmaxShape& shape, const Tensor& item_stats, Tensor& sums) {
    Launch::add_sums(shape, item_stats, sums, nullptr);
  }
  /// `add_sums` reading the real rows from `real_rows` (one `uint32`) on the device.
  static void add_sums(const SoftmaxShape& shape, const Tensor& item_stats, Tensor& sums,
                       const Tensor& real_rows) {
    Launch::add_sums(shape, item_stats, sums, &real_rows);
  }
};

}  // namespace stoke

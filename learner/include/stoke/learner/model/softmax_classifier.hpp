#pragma once
/// @file
/// `SoftmaxClassifier`: a linear softmax classifier that trains in the device memory of any
/// `SoftmaxBackend` (a `DeviceTrainStep`), with `Mlp({features, classes})`'s parameter layout,
/// so the host `Mlp` is its reference and its checkpoints load in either.

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include <stoke/core/backend.hpp>
#include <stoke/core/error.hpp>
#include <stoke/data/batch.hpp>
#include <stoke/learner/device_backend.hpp>
#include <stoke/learner/kernels/device_training.hpp>
#include <stoke/learner/kernels/device_training_checks.hpp>
#include <stoke/learner/kernels/softmax_classifier.hpp>
#include <stoke/learner/kernels/softmax_classifier_checks.hpp>
#include <stoke/learner/model/mlp.hpp>
#include <stoke/learner/parameter_layout.hpp>

namespace stoke {

/// A `DeviceBackend` that runs the softmax classifier's kernels: `SoftmaxKernels<B::Tensor>`
/// is specialized (see `kernels/softmax_classifier.hpp`), its `forward`, `gradients` and
/// `add_sums` taking `B::Tensor`s, with or without the real-row tensor.
template <class B>
concept SoftmaxBackend =
    DeviceBackend<B> && requires(const SoftmaxShape& shape, typename B::Tensor& tensor) {
      SoftmaxKernels<typename B::Tensor>::forward(shape, tensor, tensor, tensor, tensor, tensor);
      SoftmaxKernels<typename B::Tensor>::gradients(shape, tensor, tensor, tensor, tensor);
      SoftmaxKernels<typename B::Tensor>::add_sums(shape, tensor, tensor);
      SoftmaxKernels<typename B::Tensor>::forward(shape, tensor, tensor, tensor, tensor, tensor,
                                                  tensor);
      SoftmaxKernels<typename B::Tensor>::gradients(shape, tensor, tensor, tensor, tensor, tensor);
      SoftmaxKernels<typename B::Tensor>::add_sums(shape, tensor, tensor, tensor);
    };

/// Logits `x W + b` and softmax cross-entropy, on one device of backend `B`, for batches of
/// `Data` (a device batch: `inputs`, a `B::Tensor` of `rows x row_size` floats, host
/// `labels` and `device_labels`, the same as int32 on the device: a `DeviceImageBatch` such as
/// `vulkan::ImageBatch` or `cuda::ImageBatch`, which `prefetch_to_device`'s stage makes from a
/// host batch, labels included, so a batch reaches the model with its labels on the device).
///
/// The parameters are one tensor: `W` as a `features x classes` row-major matrix, then the
/// `classes` biases (`Mlp({features, classes})`'s layout). A step checks the batch's labels on
/// the host and enqueues the forward and backward kernels on its `device_labels`; nothing
/// waits and nothing is uploaded. The kernels read the batch's real rows from a tensor on the
/// device, written
/// (`B::fill_words`, nothing staged) only when the count changes (a padded last batch), so a
/// step's arguments are the same every step. One replica runs one step at a time (it reuses its
/// scratch tensors).
template <SoftmaxBackend B, class Data>
  requires requires(const Data& data) {
    { data.device_labels } -> std::convertible_to<const typename B::Tensor&>;
  }
class SoftmaxClassifier {
 public:
  using BatchType = Batch<Data>;      ///< the batches it trains on
  using Tensor = typename B::Tensor;  ///< floats on its device

  /// A classifier on `device` with the given `parameters` (`features * classes + classes`
  /// floats). Throws `UsageError` for a wrong count or an unsupported size.
  SoftmaxClassifier(const device_t<B>& device, std::size_t features, std::size_t classes,
                    std::span<const float> parameters)
      : device_(device), features_(features), classes_(classes) {
    if (features == 0 || classes == 0 || classes > max_softmax_classes) {
      throw UsageError("stoke: SoftmaxClassifier of " + std::to_string(features) +
                       " features and " + std::to_string(classes) +
                       " classes (features > 0, classes 1 to " +
                       std::to_string(max_softmax_classes) + ")");
    }
    if (parameters.size() != parameter_count()) {
      throw UsageError("stoke: SoftmaxClassifier of " + std::to_string(features) + " x " +
                       std::to_string(classes) + " needs " + std::to_string(parameter_count()) +
                       " parameters, got " + std::to_string(parameters.size()));
    }
    parameters_ = B::zeros(device_, parameter_count());
    B::upload(parameters_, std::as_bytes(parameters));
  }

  /// A classifier on `device` initialised as `Mlp({features, classes}, seed)` is.
  SoftmaxClassifier(const device_t<B>& device, std::size_t features, std::size_t classes,
                    std::uint64_t seed)
      : SoftmaxClassifier(device, features, classes, Mlp({features, classes}, seed).parameters()) {}

  SoftmaxClassifier(SoftmaxClassifier&&) noexcept = default;             ///< moves the tensors
  SoftmaxClassifier& operator=(SoftmaxClassifier&&) noexcept = default;  ///< moves the tensors

  /// A replica on `device` with the same parameters (downloaded and uploaded there).
  [[nodiscard]] SoftmaxClassifier fork(const device_t<B>& device) const {
    const std::vector<float> values = B::download(parameters_);
    return SoftmaxClassifier(device, features_, classes_,
                             std::span<const float>(values).first(parameter_count()));
  }

  /// The parameters, in device memory.
  [[nodiscard]] Tensor& parameters() noexcept { return parameters_; }
  /// The parameters, read-only.
  [[nodiscard]] const Tensor& parameters() const noexcept { return parameters_; }
  /// `features * classes + classes`.
  [[nodiscard]] std::size_t parameter_count() const noexcept {
    return features_ * classes_ + classes_;
  }
  /// The device it lives on.
  [[nodiscard]] const device_t<B>& device() const noexcept { return device_; }

  /// `layers.0.weight` (`features x classes`) and `layers.0.bias`, as `Mlp` names them.
  [[nodiscard]] std::vector<ParameterTensor> parameter_layout() const {
    return {{"layers.0.weight", {features_, classes_}, 0},
            {"layers.0.bias", {classes_}, features_ * classes_}};
  }

  /// Enqueues forward and backward on `batch`: `reduced` gets the gradient sums over the real
  /// items, then their loss sum, count and correct count (see `DeviceTrainStep`).
  void train_step(const BatchType& batch, Tensor& reduced) {
    const SoftmaxShape shape = prepare(batch);
    Kernels::forward(shape, batch.data.inputs, batch.data.device_labels, parameters_, dlogits_,
                     item_stats_, real_rows_);
    Kernels::gradients(shape, batch.data.inputs, dlogits_, item_stats_, reduced, real_rows_);
  }

  /// Enqueues the evaluation of `batch`, adding its loss sum, count and correct count to the
  /// three floats of `sums`.
  void valid_step(const BatchType& batch, Tensor& sums) {
    const SoftmaxShape shape = prepare(batch);
    Kernels::forward(shape, batch.data.inputs, batch.data.device_labels, parameters_, dlogits_,
                     item_stats_, real_rows_);
    Kernels::add_sums(shape, item_stats_, sums, real_rows_);
  }

  /// Throws `UsageError` unless `batch` fits the model: its sizes agree, its rows have the
  /// model's features and every real item's label is a class. Host work only (a captured step
  /// runs it on every batch, its device work being the graph's).
  void check(const BatchType& batch) const {
    const Data& data = batch.data;
    if (batch.padding > batch.size() || data.rows != batch.size() ||
        data.labels.size() != data.rows) {
      throw UsageError("stoke: SoftmaxClassifier: batch has " + std::to_string(batch.size()) +
                       " indices, " + std::to_string(batch.padding) + " of them padding, but " +
                       std::to_string(data.rows) + " input rows and " +
                       std::to_string(data.labels.size()) + " labels");
    }
    if (data.rows != 0 && data.row_size != features_) {
      throw UsageError("stoke: SoftmaxClassifier: input rows have " +
                       std::to_string(data.row_size) + " features, the model expects " +
                       std::to_string(features_));
    }
    const std::size_t real = batch.real_size();
    for (std::size_t i = 0; i < real; ++i) {
      const std::int64_t label = data.labels[i];
      if (label < 0 || label >= static_cast<std::int64_t>(classes_)) {
        throw UsageError("stoke: SoftmaxClassifier: label " + std::to_string(label) + " of item " +
                         std::to_string(i) + " (sample " + std::to_string(batch.indices[i]) +
                         ") is outside [0, " + std::to_string(classes_) + ")");
      }
    }
  }

 private:
  using Kernels = SoftmaxKernels<Tensor>;  ///< the model's kernels on `B`'s tensors

  /// Checks `batch` against the model, sizes the scratch tensors and writes its real-row count
  /// where it differs from the last batch's.
  SoftmaxShape prepare(const BatchType& batch) {
    check(batch);
    const Data& data = batch.data;
    const std::size_t real = batch.real_size();
    if (capacity(data.device_labels) < data.rows) {
      throw UsageError("stoke: SoftmaxClassifier: the batch's device labels hold " +
                       std::to_string(capacity(data.device_labels)) + " of its " +
                       std::to_string(data.rows) + " rows");
    }
    grow(dlogits_, data.rows * classes_);
    grow(item_stats_, data.rows * 2);
    if (real != real_rows_on_device_) {
      grow(real_rows_, 1);
      B::fill_words(real_rows_, detail::kernel_index("SoftmaxClassifier", real, "a batch"));
      real_rows_on_device_ = real;
    }
    return SoftmaxShape{data.rows, real, features_, classes_};
  }

  /// Makes `tensor` hold at least `floats` floats (it never shrinks).
  void grow(Tensor& tensor, std::size_t floats) {
    if (capacity(tensor) < floats) tensor = B::zeros(device_, floats);
  }
  static std::size_t capacity(const Tensor& tensor) { return tensor.size() / sizeof(float); }

  device_t<B> device_;
  std::size_t features_;
  std::size_t classes_;
  Tensor parameters_;
  Tensor dlogits_;     // d(loss)/d(logits), rows x classes
  Tensor item_stats_;  // per item: loss, correct
  Tensor real_rows_;   // the real rows of the last batch, one uint32
  std::size_t real_rows_on_device_ = static_cast<std::size_t>(-1);  // what `real_rows_` holds
};

}  // namespace stoke

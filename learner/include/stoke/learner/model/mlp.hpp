#pragma once
/// @file
/// `Mlp`: a multilayer perceptron for classification (ReLU hidden layers, softmax
/// cross-entropy output) whose parameters live in one flat buffer, with a hand-written
/// backward pass over whole batches.

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <numbers>
#include <span>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include <Eigen/Core>

#include <stoke/core/error.hpp>
#include <stoke/core/rng.hpp>
#include <stoke/data/batch.hpp>
#include <stoke/data/classification_batch.hpp>
#include <stoke/learner/parameter_layout.hpp>
#include <stoke/learner/train_step.hpp>

namespace stoke {

namespace detail {

/// Row-major float matrix: the storage order of batches, parameters and scratch.
using MlpMatrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
/// A row vector of floats (one bias).
using MlpRow = Eigen::Matrix<float, 1, Eigen::Dynamic>;

/// Fills `out` with independent normal draws of mean 0 and standard deviation `stddev`:
/// Box-Muller over `rng`, computed in double and rounded once, so every platform gives the
/// same floats (unlike `std::normal_distribution`, whose algorithm the library chooses).
inline void fill_normal(std::span<float> out, double stddev, SampleRng& rng) {
  constexpr double kTwoPi = 2.0 * std::numbers::pi;
  constexpr double kInv32 = 0x1.0p-32;
  for (std::size_t i = 0; i < out.size(); i += 2) {
    const double u1 = (static_cast<double>(rng()) + 1.0) * kInv32;  // (0, 1]: log is finite
    const double u2 = static_cast<double>(rng()) * kInv32;          // [0, 1)
    const double radius = stddev * std::sqrt(-2.0 * std::log(u1));
    out[i] = static_cast<float>(radius * std::cos(kTwoPi * u2));
    if (i + 1 < out.size()) out[i + 1] = static_cast<float>(radius * std::sin(kTwoPi * u2));
  }
}

/// The Mlp's own float buffers (parameters, activations, backward scratch), aligned to
/// Eigen's largest packet. Eigen computes a buffer's elements up to its first aligned address
/// one at a time and the rest in packets, and a scalar `exp` rounds unlike a packet one: with
/// `malloc`'s 16-byte alignment, the softmax's last bits moved with where the heap put the
/// activations, which other threads change from run to run.
using AlignedFloats = std::vector<float, Eigen::aligned_allocator<float>>;

/// Grows `buffer` to at least `size` elements; never shrinks, so a warmed-up replica does not
/// allocate again.
inline float* scratch(AlignedFloats& buffer, std::size_t size) {
  if (buffer.size() < size) buffer.resize(size);
  return buffer.data();
}

}  // namespace detail

/// A multilayer perceptron for classification: `layer_sizes = {inputs, hidden..., classes}`,
/// ReLU after every hidden layer, softmax cross-entropy on the output.
///
/// Parameters are one flat buffer of floats. For every layer `l` (fan-in
/// `n = layer_sizes[l]`, fan-out `k = layer_sizes[l + 1]`) it holds, in order, the weights as
/// an `n x k` row-major matrix `W` (`W(i, j)` joins input `i` to output `j`) and then the
/// `k` biases `b`; the layer computes `z = a W + b` for a row `a` of activations. Gradients
/// use the same layout. Layers are `Eigen::Map`s into the buffer, never copies.
///
/// Satisfies `TrainStep` and `ValidationStep` for `Batch<ClassificationBatch>` (the CPU backend's
/// `cpu::ClassificationBatch`). Copies are independent replicas. One replica must not run two steps
/// at once (it reuses scratch buffers, also from the `const` `valid_step`); the learner gives every
/// device its own.
class Mlp {
 public:
  /// The batches this model trains on.
  using BatchType = Batch<ClassificationBatch>;

  /// A model with the given layer sizes (at least two, none zero), He-initialised from
  /// `seed`: layer `l`'s weights are normal with variance `2 / fan_in`, drawn from
  /// `SampleRng(seed, 0, l)`; biases are zero. The same seed gives the same parameters on
  /// every platform.
  Mlp(std::vector<std::size_t> layer_sizes, std::uint64_t seed) : sizes_(std::move(layer_sizes)) {
    if (sizes_.size() < 2) {
      throw UsageError("Mlp needs at least an input and an output size, got " +
                       std::to_string(sizes_.size()) + " sizes");
    }
    if (std::ranges::find(sizes_, std::size_t{0}) != sizes_.end()) {
      throw UsageError("Mlp layer sizes must not be zero");
    }
    std::size_t offset = 0;
    for (std::size_t l = 0; l + 1 < sizes_.size(); ++l) {
      offsets_.push_back(offset);
      offset += sizes_[l] * sizes_[l + 1] + sizes_[l + 1];
    }
    parameters_.assign(offset, 0.0f);
    for (std::size_t l = 0; l < layer_count(); ++l) {
      SampleRng rng(seed, 0, l);
      const auto layer_weights =
          std::span(parameters_).subspan(offsets_[l], sizes_[l] * sizes_[l + 1]);
      detail::fill_normal(layer_weights, std::sqrt(2.0 / static_cast<double>(sizes_[l])), rng);
    }
    activations_.resize(layer_count());
  }

  /// The parameters, in the layout described on the class.
  [[nodiscard]] std::span<float> parameters() noexcept { return parameters_; }
  /// The parameters, read-only.
  [[nodiscard]] std::span<const float> parameters() const noexcept { return parameters_; }
  /// Number of parameters (weights and biases of every layer).
  [[nodiscard]] std::size_t parameter_count() const noexcept { return parameters_.size(); }
  /// The sizes given at construction: inputs, hidden widths, classes.
  [[nodiscard]] const std::vector<std::size_t>& layer_sizes() const noexcept { return sizes_; }
  /// Number of weight layers (`layer_sizes().size() - 1`).
  [[nodiscard]] std::size_t layer_count() const noexcept { return sizes_.size() - 1; }

  /// The tensors of the flat buffer: `layers.<l>.weight` (`fan_in x fan_out`) and
  /// `layers.<l>.bias` (`fan_out`) for every layer.
  [[nodiscard]] std::vector<ParameterTensor> parameter_layout() const {
    std::vector<ParameterTensor> out;
    for (std::size_t l = 0; l < layer_count(); ++l) {
      const std::string prefix = "layers." + std::to_string(l);
      out.push_back({prefix + ".weight", {sizes_[l], sizes_[l + 1]}, offsets_[l]});
      out.push_back({prefix + ".bias", {sizes_[l + 1]}, offsets_[l] + sizes_[l] * sizes_[l + 1]});
    }
    return out;
  }

  /// Forward and backward on the batch's real items: writes into `gradients` (one float per
  /// parameter) the SUM over those items of the gradient of their cross-entropy loss, and
  /// returns the summed loss, the number predicted right and the count. The trailing
  /// `batch.padding` rows are neither read nor counted.
  /// Throws `UsageError` for a batch or buffer of the wrong shape or a label out
  /// of range.
  StepOutput train_step(const BatchType& batch, std::span<float> gradients) {
    if (gradients.size() != parameters_.size()) {
      throw UsageError("Mlp::train_step: gradient buffer has " + std::to_string(gradients.size()) +
                       " floats, the model has " + std::to_string(parameters_.size()) +
                       " parameters");
    }
    const auto rows = check(batch);
    if (rows == 0) {
      std::ranges::fill(gradients, 0.0f);
      return {};
    }
    const auto input = input_map(batch, rows);
    forward(input, rows);
    const auto out = loss(batch.data.labels, rows, /*gradient=*/true);
    backward(input, rows, gradients);
    return out;
  }

  /// Forward on the batch's real items: the summed loss, the number predicted right and the
  /// count. Does not change the parameters. Throws like `train_step`.
  StepOutput valid_step(const BatchType& batch) const {
    const auto rows = check(batch);
    if (rows == 0) return {};
    forward(input_map(batch, rows), rows);
    return loss(batch.data.labels, rows, /*gradient=*/false);
  }

 private:
  using Matrix = detail::MlpMatrix;
  using Index = Eigen::Index;

  [[nodiscard]] static Index ix(std::size_t n) noexcept { return static_cast<Index>(n); }

  // Layer l's weights and biases inside `base` (the parameters or the gradients).
  template <class T>
  [[nodiscard]] auto weights(T* base, std::size_t l) const {
    using M = std::conditional_t<std::is_const_v<T>, const Matrix, Matrix>;
    return Eigen::Map<M>(base + offsets_[l], ix(sizes_[l]), ix(sizes_[l + 1]));
  }
  template <class T>
  [[nodiscard]] auto biases(T* base, std::size_t l) const {
    using R = std::conditional_t<std::is_const_v<T>, const detail::MlpRow, detail::MlpRow>;
    return Eigen::Map<R>(base + offsets_[l] + sizes_[l] * sizes_[l + 1], ix(sizes_[l + 1]));
  }
  // Layer l's output (post-ReLU for hidden layers, logits then softmax for the last).
  [[nodiscard]] Eigen::Map<Matrix> activation(std::size_t l, Index rows) const {
    const auto width = ix(sizes_[l + 1]);
    return {detail::scratch(activations_[l], static_cast<std::size_t>(rows * width)), rows, width};
  }

  // Validates the batch's shape against the model; returns the number of real rows.
  std::size_t check(const BatchType& batch) const {
    const auto& inputs = batch.data.inputs;
    const auto& labels = batch.data.labels;
    if (batch.padding > batch.size()) {
      throw UsageError("Mlp: batch padding " + std::to_string(batch.padding) + " exceeds its " +
                       std::to_string(batch.size()) + " items");
    }
    if (inputs.rows() != batch.size() || labels.size() != batch.size()) {
      throw UsageError("Mlp: batch has " + std::to_string(batch.size()) + " indices but " +
                       std::to_string(inputs.rows()) + " input rows and " +
                       std::to_string(labels.size()) + " labels");
    }
    if (inputs.rows() != 0 && inputs.row_size() != sizes_.front()) {
      throw UsageError("Mlp: input rows have " + std::to_string(inputs.row_size()) +
                       " features, the model expects " + std::to_string(sizes_.front()));
    }
    const auto rows = batch.real_size();
    const auto classes = static_cast<std::int64_t>(sizes_.back());
    for (std::size_t i = 0; i < rows; ++i) {
      if (labels[i] < 0 || labels[i] >= classes) {
        throw UsageError("Mlp: label " + std::to_string(labels[i]) + " of item " +
                         std::to_string(i) + " is outside [0, " + std::to_string(classes) + ")");
      }
    }
    return rows;
  }

  [[nodiscard]] Eigen::Map<const Matrix> input_map(const BatchType& batch, std::size_t rows) const {
    return {batch.data.inputs.values().data(), ix(rows), ix(sizes_.front())};
  }

  // Fills every layer's activation for the first `rows` rows: z = a W + b, ReLU on hidden.
  void forward(const Eigen::Map<const Matrix>& input, std::size_t rows) const {
    const float* p = parameters_.data();
    for (std::size_t l = 0; l < layer_count(); ++l) {
      auto out = activation(l, ix(rows));
      if (l == 0) {
        out.noalias() = input * weights(p, l);
      } else {
        out.noalias() = activation(l - 1, ix(rows)) * weights(p, l);
      }
      out.rowwise() += biases(p, l);
      if (l + 1 < layer_count()) out = out.cwiseMax(0.0f);
    }
  }

  // Softmax cross-entropy on the logits, row by row (stable: the row max is subtracted).
  // With `gradient`, the logits are replaced by d(loss)/d(logits) = softmax - one_hot(label).
  StepOutput loss(const std::vector<std::int32_t>& labels, std::size_t rows, bool gradient) const {
    auto logits = activation(layer_count() - 1, ix(rows));
    StepOutput out{.count = rows};
    for (Index i = 0; i < ix(rows); ++i) {
      auto row = logits.row(i);
      Index predicted = 0;
      const float max = row.maxCoeff(&predicted);
      const auto label = static_cast<Index>(labels[static_cast<std::size_t>(i)]);
      const float label_logit = row(label);
      row = (row.array() - max).exp().matrix();
      const float sum = row.sum();
      out.loss_sum += static_cast<double>(std::log(sum) + (max - label_logit));
      out.correct += predicted == label ? 1 : 0;
      if (gradient) {
        row /= sum;
        row(label) -= 1.0f;
      }
    }
    return out;
  }

  // Writes the sum of `matrix`'s rows into `out`, row after row. Eigen's `colwise().sum()`
  // sums a column in another order where `out` is aligned than where it is not, so the bias
  // gradients' last bits depended on the address of the caller's gradient buffer.
  static void sum_rows(const Eigen::Map<const Matrix>& matrix, Eigen::Map<detail::MlpRow> out) {
    out.setZero();
    for (Index row = 0; row < matrix.rows(); ++row) out += matrix.row(row);
  }

  // Backpropagates the output gradient left in the last activation; writes every layer's
  // weight and bias gradient sums into `gradients`.
  void backward(const Eigen::Map<const Matrix>& input, std::size_t rows,
                std::span<float> gradients) const {
    float* g = gradients.data();
    const float* p = parameters_.data();
    const auto n = ix(rows);
    float* delta_data = activation(layer_count() - 1, n).data();  // softmax - one_hot
    detail::AlignedFloats* next_buffer = &delta_a_;
    for (std::size_t l = layer_count(); l-- > 0;) {
      const Eigen::Map<const Matrix> delta(delta_data, n, ix(sizes_[l + 1]));
      if (l == 0) {
        weights(g, l).noalias() = input.transpose() * delta;
        sum_rows(delta, biases(g, l));
        break;
      }
      const auto below = activation(l - 1, n);  // this layer's input, post-ReLU
      weights(g, l).noalias() = below.transpose() * delta;
      sum_rows(delta, biases(g, l));
      Eigen::Map<Matrix> previous(
          detail::scratch(*next_buffer, static_cast<std::size_t>(n * below.cols())), n,
          below.cols());
      previous.noalias() = delta * weights(p, l).transpose();
      previous.array() *= (below.array() > 0.0f).cast<float>();  // ReLU'(z) = [relu(z) > 0]
      delta_data = previous.data();
      next_buffer = next_buffer == &delta_a_ ? &delta_b_ : &delta_a_;
    }
  }

  std::vector<std::size_t> sizes_;
  std::vector<std::size_t> offsets_;  // start of every layer's weights in parameters_
  detail::AlignedFloats parameters_;
  mutable std::vector<detail::AlignedFloats> activations_;  // one per layer, grow-only
  mutable detail::AlignedFloats delta_a_, delta_b_;         // backward ping-pong, grow-only
};

}  // namespace stoke

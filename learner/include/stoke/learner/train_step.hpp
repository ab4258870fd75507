#pragma once
/// @file
/// The `TrainStep` and `ValidationStep` concepts: what a model replica must do on one batch.

#include <concepts>
#include <cstddef>
#include <span>

namespace stoke {

/// What one step on one batch gives back. Sums, not means, so that results from devices
/// with different numbers of real (non-padding) items combine exactly.
struct StepOutput {
  double loss_sum = 0.0;    ///< sum of the per-item losses over the real items
  std::size_t correct = 0;  ///< real items predicted right (classification; 0 otherwise)
  std::size_t count = 0;    ///< real items (padding excluded)

  /// Adds another step's sums (across devices or batches).
  StepOutput& operator+=(const StepOutput& other) noexcept {
    loss_sum += other.loss_sum;
    correct += other.correct;
    count += other.count;
    return *this;
  }
};

/// A model replica that can train on a batch.
///
/// Requirements:
/// 1. `m.parameters()` is the replica's parameters as one flat buffer of floats;
/// 2. `m.train_step(batch, gradients)` runs forward and backward on `batch`, writes into
///    `gradients` (same size as the parameters) the SUM of the per-item gradients over the
///    batch's real items (padding, `batch.padding` trailing items, contributes nothing), and
///    returns the loss sum and the count;
/// 3. copies are independent replicas (the learner makes one per device).
template <class M, class BatchT>
concept TrainStep = std::copy_constructible<M> &&
                    requires(M& model, const BatchT& batch, std::span<float> gradients) {
                      { model.parameters() } -> std::convertible_to<std::span<float>>;
                      { model.train_step(batch, gradients) } -> std::same_as<StepOutput>;
                    };

/// A validation step: a model replica that can evaluate a batch.
///
/// Requirements:
/// 1. `m.valid_step(batch)`, on a `const` model, returns the `StepOutput` sums (loss,
///    correct, count) over the batch's real items, its padding left out;
/// 2. it does not change the model.
template <class M, class BatchT>
concept ValidationStep = requires(const M& model, const BatchT& batch) {
  { model.valid_step(batch) } -> std::same_as<StepOutput>;
};

}  // namespace stoke

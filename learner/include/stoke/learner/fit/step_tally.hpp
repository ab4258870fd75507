#pragma once
/// @file
/// `detail::StepTally`: device 0's running sums of an epoch's training steps, brought to the
/// host from its replica, and the mean loss of every step.

#include <cstddef>
#include <vector>

#include <stoke/learner/train_step.hpp>

namespace stoke::detail {

/// The step sums of one epoch that device 0 has brought to the host: after every step on a
/// host replica; at progress lines, checkpoints, an early stop and the epoch's end on a device
/// one, where bringing them waits for the device.
class StepTally {
 public:
  /// Starts from `sums` (those of the epoch's steps before a resume, or none) and appends the
  /// mean loss of every step it brings to `step_losses`.
  StepTally(const StepOutput& sums, std::vector<float>& step_losses)
      : sums_(sums), step_losses_(&step_losses) {}

  /// Brings the sums of `replica`'s steps not yet brought.
  template <class R>
  void settle(const R& replica) {
    const auto& outputs = replica.epoch_steps();
    for (; settled_ < outputs.size(); ++settled_) {
      sums_ += outputs[settled_];
      step_losses_->push_back(mean_loss(outputs[settled_]));
    }
  }

  /// The epoch's sums so far (as far as brought).
  [[nodiscard]] const StepOutput& sums() const noexcept { return sums_; }

  /// The mean loss of a step (0 for a step without real items).
  static float mean_loss(const StepOutput& step) {
    return step.count > 0 ? static_cast<float>(step.loss_sum / static_cast<double>(step.count))
                          : 0.0f;
  }

 private:
  StepOutput sums_;
  std::vector<float>* step_losses_;
  std::size_t settled_ = 0;
};

}  // namespace stoke::detail

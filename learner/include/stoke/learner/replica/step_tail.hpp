#pragma once
/// @file
/// `detail::StepTail`: the three step sums `[loss, count, correct]` as floats, where the
/// learner and its replicas keep them (the end of the reduced buffer, each step's slot of a
/// device's epoch history, the validation sums, the start of the epoch's exchange). The only
/// place that knows their order; the device kernels write the same order.

#include <cstddef>
#include <span>

#include <stoke/learner/kernels/device_training.hpp>
#include <stoke/learner/train_step.hpp>

namespace stoke::detail {

/// Where each sum sits in a tail of `reduced_tail` floats.
struct StepTail {
  static constexpr std::size_t loss_sum = 0;  ///< the loss summed over the real items
  static constexpr std::size_t count = 1;     ///< the real items (padding excluded)
  static constexpr std::size_t correct = 2;   ///< the real items predicted right
};
static_assert(reduced_tail == 3, "StepTail names every float of the tail");

/// The sums in `tail`, its first `reduced_tail` floats.
inline StepOutput read_tail(std::span<const float> tail) {
  return StepOutput{.loss_sum = tail[StepTail::loss_sum],
                    .correct = static_cast<std::size_t>(tail[StepTail::correct]),
                    .count = static_cast<std::size_t>(tail[StepTail::count])};
}

/// Writes `sums` into the first `reduced_tail` floats of `tail`.
inline void write_tail(std::span<float> tail, const StepOutput& sums) {
  tail[StepTail::loss_sum] = static_cast<float>(sums.loss_sum);
  tail[StepTail::count] = static_cast<float>(sums.count);
  tail[StepTail::correct] = static_cast<float>(sums.correct);
}

}  // namespace stoke::detail

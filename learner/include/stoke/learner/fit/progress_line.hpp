#pragma once
/// @file
/// `detail::ProgressLine`: the live line of an epoch's progress on a terminal.

#include <algorithm>
#include <cstddef>
#include <ostream>

#include <fmt/format.h>

#include <stoke/learner/options.hpp>
#include <stoke/learner/train_step.hpp>

namespace stoke::detail {

/// The live progress line of one epoch (`LearnerOptions::live_progress`, with a log): shown
/// after every step where the step sums are on the host, else about 20 times an epoch (each
/// time the sums are brought from the device), and after the epoch's last step.
class ProgressLine {
 public:
  /// The line of `epoch` (0-based), of `steps` steps; `every_step` where showing it costs no
  /// wait on the device.
  ProgressLine(const LearnerOptions& options, std::size_t epoch, std::size_t steps, bool every_step)
      : log_(options.live_progress ? options.log : nullptr),
        epoch_(epoch),
        epochs_(options.epochs),
        steps_(steps),
        every_(every_step ? 1 : std::max<std::size_t>(1, steps / 20)) {}

  /// Whether the line is shown after step `step` (0-based in the epoch).
  [[nodiscard]] bool due(std::size_t step) const noexcept {
    return log_ != nullptr && ((step + 1) % every_ == 0 || step + 1 == steps_);
  }

  /// Shows the line after step `step`, with the epoch's mean loss from `sums`.
  void show(std::size_t step, const StepOutput& sums) const {
    *log_ << fmt::format("\repoch {}/{} step {}/{} loss {:.4f}   ", epoch_ + 1, epochs_, step + 1,
                         steps_,
                         sums.loss_sum / static_cast<double>(std::max<std::size_t>(1, sums.count)))
          << std::flush;
  }

 private:
  std::ostream* log_;
  std::size_t epoch_;
  std::size_t epochs_;
  std::size_t steps_;
  std::size_t every_;
};

}  // namespace stoke::detail

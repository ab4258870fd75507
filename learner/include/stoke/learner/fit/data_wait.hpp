#pragma once
/// @file
/// `detail::DataWait`: the time a device's step loop waits for its batches.

#include <chrono>

namespace stoke::detail {

/// The clock of the learner's timings.
using LearnerClock = std::chrono::steady_clock;

/// Seconds from `start` to now.
inline double seconds_since(LearnerClock::time_point start) {
  return std::chrono::duration<double>(LearnerClock::now() - start).count();
}

/// The seconds one device waited for data in an epoch: the calls into its loader's range
/// that wait for a batch, each between `start()` and `stop()`.
class DataWait {
 public:
  /// Starts timing a wait.
  void start() noexcept { since_ = LearnerClock::now(); }
  /// Ends the wait `start()` began, adding its time.
  void stop() noexcept { seconds_ += seconds_since(since_); }

  /// The seconds waited so far.
  [[nodiscard]] double seconds() const noexcept { return seconds_; }

 private:
  LearnerClock::time_point since_{};
  double seconds_ = 0.0;
};

}  // namespace stoke::detail

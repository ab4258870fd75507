#pragma once
/// @file
/// `WorkerActivity`: what a worker thread is doing now (its `Activity` and the dataset index), kept
/// so that a batch that times out can name the `get` that hangs.

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>

namespace stoke::detail {

/// What a worker thread does: nothing, `Dataset::get`, `Dataset::get_many`, or the batcher.
enum class Activity : std::uint8_t { idle, get, get_many, batch };

/// The activity a worker thread is in, and the dataset index it works on. Written by the thread
/// itself at every sample (one relaxed store), read by a consumer whose batch timed out.
class WorkerActivity {
 public:
  /// The thread is now in `activity`, at dataset `index`.
  void note(Activity activity, std::size_t index) noexcept {
    word_.store((static_cast<std::uint64_t>(activity) << index_bits) | (index & index_mask),
                std::memory_order_relaxed);
  }

  /// The activity last noted.
  [[nodiscard]] Activity activity() const noexcept {
    return static_cast<Activity>(word_.load(std::memory_order_relaxed) >> index_bits);
  }
  /// The dataset index last noted (its low 56 bits).
  [[nodiscard]] std::size_t index() const noexcept {
    return static_cast<std::size_t>(word_.load(std::memory_order_relaxed) & index_mask);
  }

 private:
  static constexpr unsigned index_bits = 56;
  static constexpr std::uint64_t index_mask = (std::uint64_t{1} << index_bits) - 1;
  std::atomic<std::uint64_t> word_{0};
};

/// The name of `activity` in errors: `"idle"`, `"get"`, `"get_many"` or `"batch"`.
inline std::string activity_name(Activity activity) {
  switch (activity) {
    case Activity::get:
      return "get";
    case Activity::get_many:
      return "get_many";
    case Activity::batch:
      return "batch";
    case Activity::idle:
      break;
  }
  return "idle";
}

/// The activity of the calling thread, set by its worker pool (null on other threads).
inline thread_local WorkerActivity* this_thread_activity = nullptr;

/// Notes that the calling thread is in `activity` at dataset `index` (nothing on a thread that
/// no worker pool runs).
inline void note_activity(Activity activity, std::size_t index) noexcept {
  if (WorkerActivity* current = this_thread_activity) current->note(activity, index);
}

}  // namespace stoke::detail

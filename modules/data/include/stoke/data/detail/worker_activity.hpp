#pragma once
/// @file
/// `WorkerActivity`: what a worker thread is doing now (which stage, which dataset index), kept
/// so that a batch that times out can name the `get` that hangs.

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>

namespace stoke::detail {

/// The stage a worker thread is in, and the dataset index it works on. Written by the thread
/// itself at every sample (one relaxed store), read by a consumer whose batch timed out.
class WorkerActivity {
 public:
  /// What the thread does.
  enum class Stage : std::uint8_t { idle, get, get_many, batch };

  /// The thread is now in `stage`, at dataset `index`.
  void note(Stage stage, std::size_t index) noexcept {
    word_.store((static_cast<std::uint64_t>(stage) << index_bits) | (index & index_mask),
                std::memory_order_relaxed);
  }

  /// The stage last noted.
  [[nodiscard]] Stage stage() const noexcept {
    return static_cast<Stage>(word_.load(std::memory_order_relaxed) >> index_bits);
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

/// The name of `stage` in errors: `"idle"`, `"get"`, `"get_many"` or `"batch"`.
inline std::string stage_name(WorkerActivity::Stage stage) {
  switch (stage) {
    case WorkerActivity::Stage::get:
      return "get";
    case WorkerActivity::Stage::get_many:
      return "get_many";
    case WorkerActivity::Stage::batch:
      return "batch";
    case WorkerActivity::Stage::idle:
      break;
  }
  return "idle";
}

/// The activity of the calling thread, set by its worker pool (null on other threads).
inline thread_local WorkerActivity* this_thread_activity = nullptr;

/// Notes that the calling thread is in `stage` at dataset `index` (nothing on a thread that no
/// worker pool runs).
inline void note_activity(WorkerActivity::Stage stage, std::size_t index) noexcept {
  if (WorkerActivity* activity = this_thread_activity) activity->note(stage, index);
}

}  // namespace stoke::detail

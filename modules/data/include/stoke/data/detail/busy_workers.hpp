#pragma once
/// @file
/// `BusyWorkers`: what each thread of a `WorkerPool` is busy with, and the `TimeoutError` of a
/// step not ready in time, which names them.

#include <chrono>
#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <stoke/core/error.hpp>
#include <stoke/data/detail/batch_maker.hpp>
#include <stoke/data/detail/thread_names.hpp>
#include <stoke/data/detail/worker_activity.hpp>

namespace stoke::detail {

/// The workers of a pool: which step each is busy with and since when, whether it has left its
/// loop (guarded by the pool's mutex), and what it reads (its `WorkerActivity`, which it writes
/// itself).
class BusyWorkers {
  /// What a worker is busy with.
  struct State {
    bool busy = false;                              ///< making (a chunk of) a step
    std::size_t step = 0;                           ///< which step
    std::chrono::steady_clock::time_point since{};  ///< since when
    bool exited = false;                            ///< it has left its loop
  };

 public:
  /// Marks a worker busy with a step for its lifetime (the pool's mutex held at both ends).
  class Busy {
   public:
    /// Worker `id` of `workers` is busy with `step` from now on.
    Busy(BusyWorkers& workers, std::size_t id, std::size_t step) : state_(workers.states_[id]) {
      state_.busy = true;
      state_.step = step;
      state_.since = std::chrono::steady_clock::now();
    }
    Busy(const Busy&) = delete;
    Busy& operator=(const Busy&) = delete;
    ~Busy() { state_.busy = false; }

   private:
    State& state_;
  };

  /// `count` workers (at least one), none busy.
  explicit BusyWorkers(std::size_t count)
      : states_(count == 0 ? 1 : count),
        activities_(std::make_unique<WorkerActivity[]>(states_.size())) {}

  /// Number of workers.
  [[nodiscard]] std::size_t size() const noexcept { return states_.size(); }
  /// The activity worker `id` writes (`this_thread_activity` on its thread).
  [[nodiscard]] WorkerActivity& activity(std::size_t id) noexcept { return activities_[id]; }
  /// Notes that worker `id` has left its loop.
  void mark_exited(std::size_t id) noexcept { states_[id].exited = true; }
  /// Whether worker `id` has left its loop.
  [[nodiscard]] bool exited(std::size_t id) const noexcept { return states_[id].exited; }

  /// Throws the `TimeoutError` of `step` of the epoch `maker` makes (null: none), not ready
  /// within `limit`: the worker making it, or the one busy longest, is named as stuck; every
  /// busy worker is listed with its activity and index.
  template <class Value>
  [[noreturn]] void time_out(std::size_t step, const BatchMaker<Value>* maker,
                             std::chrono::milliseconds limit) const {
    const auto now = std::chrono::steady_clock::now();
    DataErrorContext where = maker ? maker->where(step) : DataErrorContext{.step = step};
    std::string report = "stoke: batch timeout: step " + std::to_string(where.step) + " of epoch " +
                         std::to_string(where.epoch) + " for device " + where.device +
                         " was not ready within " + std::to_string(limit.count()) + " ms";
    // The stuck worker: the one making `step`, else the one busy longest.
    const auto rank = [&](std::size_t id) {
      return std::pair(states_[id].step != step, states_[id].since);
    };
    std::optional<std::size_t> stuck;
    for (std::size_t id = 0; id < states_.size(); ++id) {
      const State& worker = states_[id];
      if (!worker.busy) continue;
      if (!stuck || rank(id) < rank(*stuck)) stuck = id;
      const auto busy_ms =
          std::chrono::duration_cast<std::chrono::milliseconds>(now - worker.since).count();
      const WorkerActivity& activity = activities_[id];
      report += "; " + thread_name(id) + " has been in " + activity_name(activity.activity()) +
                "(index " + std::to_string(activity.index()) + ") of step " +
                std::to_string(maker ? maker->where(worker.step).step : worker.step) + " for " +
                std::to_string(busy_ms) + " ms";
    }
    if (stuck) {
      where.activity = activity_name(activities_[*stuck].activity());
      where.index = activities_[*stuck].index();
      where.worker = thread_name(*stuck);
    } else {
      report += "; no worker is busy";
    }
    throw TimeoutError(std::move(where), report);
  }

 private:
  std::vector<State> states_;
  std::unique_ptr<WorkerActivity[]> activities_;
};

}  // namespace stoke::detail

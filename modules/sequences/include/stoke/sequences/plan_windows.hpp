#pragma once
/// @file
/// `PlanWindows`: random access to the batches of a `WindowPlanner`'s epochs, for a loader's
/// worker threads: where each plan window of an epoch starts (one `PlanCursor` a window, found
/// by one walk the first time the epoch is asked for) and the few windows planned last.

#include <algorithm>
#include <cstddef>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include <stoke/core/error.hpp>
#include <stoke/core/fork.hpp>
#include <stoke/sequences/planned_epoch.hpp>
#include <stoke/sequences/sequence_plan.hpp>

namespace stoke {

/// The batches of every epoch of a `WindowPlanner`, by their index in the epoch; safe to use from
/// several threads at once.
///
/// A concatenating planner (`SkippingPlanner`) counts an epoch in closed form and finds the
/// window of a batch by skipping the windows before it (walking lengths, planning nothing): the
/// first batch plans one window, a resume walks the lengths before its window once. Where the
/// window starts found so far are kept, for the two epochs asked about last.
///
/// Any other planner's epoch is walked once, the first time it is asked about, window after
/// window (time linear in the corpus, one window in memory), keeping where each window starts: a
/// few numbers per window of thousands of documents, for the two epochs asked about last.
/// (Threads that ask at once may each walk it; the first result is kept. No lock is held while
/// planning, and the lock is one that a fork never leaves held in the child, so a forked child's
/// loaders use it as they are.) A batch is then found by planning its window (a pure function of
/// seed, epoch and the window's start); the last `cached_windows` windows planned are kept, so
/// workers walking an epoch forward plan each window about once.
template <WindowPlanner P>
class PlanWindows {
 public:
  /// Windows planned and kept at once.
  static constexpr std::size_t cached_windows = 8;
  /// Epochs whose window starts are kept at once.
  static constexpr std::size_t cached_epochs = 2;

  /// The batches of `planner`'s epochs.
  explicit PlanWindows(P planner) : planner_(std::move(planner)) {}
  PlanWindows(const PlanWindows&) = delete;
  PlanWindows& operator=(const PlanWindows&) = delete;
  ~PlanWindows() = default;

  /// The planner.
  [[nodiscard]] const P& planner() const noexcept { return planner_; }

  /// The number of batches of `epoch`'s plan: the planner's closed form where it has one
  /// (`SkippingPlanner`), else one walk over the epoch's windows.
  [[nodiscard]] std::size_t epoch_batches(std::size_t epoch) const {
    if constexpr (SkippingPlanner<P>) {
      return planner_.epoch_batches(epoch);
    } else {
      return epoch_starts(epoch)->total;
    }
  }

  /// Where `consumed` batches of `epoch` leave its plan: the window holding batch `consumed` and
  /// its batches before it (plans that window; nothing past the epoch's end).
  [[nodiscard]] PlanPoint point(std::size_t epoch, std::size_t consumed) const {
    PlanPoint out{.epoch = epoch, .consumed = consumed};
    if (consumed == 0) return out;
    if (consumed >= epoch_batches(epoch)) {
      out.ended = true;
      return out;
    }
    if constexpr (SkippingPlanner<P>) {
      out.cursor = skipped_cursor(epoch, consumed);
    } else {
      out.cursor = holding(epoch_starts(epoch)->cursors, consumed);
    }
    const std::shared_ptr<const WindowPlan> plan = window(epoch, out.cursor.start);
    out.delivered.assign(
        plan->batches.begin(),
        plan->batches.begin() + static_cast<std::ptrdiff_t>(consumed - out.cursor.first_batch));
    return out;
  }

  /// Batch `batch` of `epoch`'s plan; a `UsageError` naming both past the epoch's end.
  [[nodiscard]] PlannedBatch batch(std::size_t epoch, std::size_t batch) const {
    const std::size_t total = epoch_batches(epoch);
    if (batch >= total) {
      throw UsageError("stoke: batch " + std::to_string(batch) + " of epoch " +
                       std::to_string(epoch) + " is past the end of its plan of " +
                       std::to_string(total) + " batches");
    }
    if constexpr (SkippingPlanner<P>) {
      const PlanCursor cursor = skipped_cursor(epoch, batch);
      return window(epoch, cursor.start)->batches.at(batch - cursor.first_batch);
    } else {
      return walked_batch(epoch, batch);
    }
  }

 private:
  /// Batch `batch` of `epoch`, found in the epoch's walked window starts.
  [[nodiscard]] PlannedBatch walked_batch(std::size_t epoch, std::size_t batch) const {
    const std::shared_ptr<const EpochStarts> starts = epoch_starts(epoch);
    const PlanCursor& cursor = holding(starts->cursors, batch);
    const std::shared_ptr<const WindowPlan> plan = window(epoch, cursor.start);
    return plan->batches.at(batch - cursor.first_batch);
  }

  /// The start of the window of `epoch` that holds batch `batch` (which the plan has), for a
  /// `SkippingPlanner`: the window starts known so far are extended by skipping windows (walking
  /// lengths only) as far as `batch`, so the first batch plans one window and a resume walks the
  /// lengths before it once, never planning the windows it passes.
  [[nodiscard]] PlanCursor skipped_cursor(std::size_t epoch, std::size_t batch) const {
    const std::lock_guard lock(mutex_);
    std::vector<PlanCursor>& known = skipped_[epoch];
    if (known.empty()) known.push_back(PlanCursor{});
    for (;;) {
      const PlanCursor& last = known.back();
      if (last.first_batch > batch) break;
      const WindowSkip skip = planner_.skip_window(epoch, last.start);
      if (batch < last.first_batch + skip.batches || skip.last) return last;
      known.push_back(PlanCursor{last.first_batch + skip.batches, skip.next});
    }
    const PlanCursor found = holding(known, batch);
    detail::keep_nearest_epochs(skipped_, epoch, cached_epochs);
    return found;
  }

  /// Where every window of one epoch starts, and its number of batches.
  struct EpochStarts {
    std::vector<PlanCursor> cursors;  ///< one per window, in order
    std::size_t total = 0;            ///< batches of the epoch
  };

  /// A window planned, by (epoch, window).
  struct CachedWindow {
    std::size_t epoch = 0;
    std::size_t window = 0;
    std::shared_ptr<const WindowPlan> plan;
  };

  /// Where `epoch`'s windows start: kept, or found by one walk (outside the lock).
  [[nodiscard]] std::shared_ptr<const EpochStarts> epoch_starts(std::size_t epoch) const {
    {
      const std::lock_guard lock(mutex_);
      if (const auto found = epochs_.find(epoch); found != epochs_.end()) return found->second;
    }
    auto starts = std::make_shared<EpochStarts>();
    PlanCursor at{};
    for (;;) {
      const WindowPlan plan = planner_.plan_window(epoch, at.start);
      starts->cursors.push_back(at);
      if (plan.last) {
        starts->total = at.first_batch + plan.batches.size();
        break;
      }
      at = PlanCursor{at.first_batch + plan.batches.size(), plan.next};
    }
    const std::lock_guard lock(mutex_);
    if (const auto found = epochs_.find(epoch); found != epochs_.end()) return found->second;
    detail::keep_nearest_epochs(epochs_, epoch, cached_epochs - 1);  // room for this one
    epochs_.emplace(epoch, starts);
    return starts;
  }

  /// The plan of `epoch`'s window at `start`: kept, or planned (outside the lock) and kept.
  [[nodiscard]] std::shared_ptr<const WindowPlan> window(std::size_t epoch,
                                                         const WindowStart& start) const {
    {
      const std::lock_guard lock(mutex_);
      for (const CachedWindow& cached : windows_) {
        if (cached.epoch == epoch && cached.window == start.window) return cached.plan;
      }
    }
    auto plan = std::make_shared<const WindowPlan>(planner_.plan_window(epoch, start));
    const std::lock_guard lock(mutex_);
    windows_.push_back(CachedWindow{epoch, start.window, plan});
    if (windows_.size() > cached_windows) windows_.pop_front();
    return plan;
  }

  /// The cursor of the last window of `cursors` starting at or before `batch` (windows without
  /// batches share their successor's first batch, so the last of equals is the one that holds it).
  [[nodiscard]] static const PlanCursor& holding(const std::vector<PlanCursor>& cursors,
                                                 std::size_t batch) {
    const auto after =
        std::upper_bound(cursors.begin(), cursors.end(), batch,
                         [](std::size_t b, const PlanCursor& c) { return b < c.first_batch; });
    return *std::prev(after);
  }

  P planner_;
  mutable detail::ForkGuarded mutex_;  ///< guards both caches; free in a forked child too
  mutable std::map<std::size_t, std::shared_ptr<const EpochStarts>> epochs_;
  mutable std::deque<CachedWindow> windows_;
  /// A `SkippingPlanner`'s window starts found so far, by epoch.
  mutable std::map<std::size_t, std::vector<PlanCursor>> skipped_;
};

}  // namespace stoke

#pragma once
/// @file
/// `PlannedEpoch`: walks one epoch of a `WindowPlanner` forward, one plan window in memory at a
/// time, and finds its batches by their index in the epoch.

#include <cstddef>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include <stoke/core/error.hpp>
#include <stoke/sequences/sequence_plan.hpp>

namespace stoke {

/// Where a walk through an epoch's plan stands: the window it holds and that window's first
/// batch (its index in the epoch). A state keeps one, so a resume plans one window.
struct PlanCursor {
  std::size_t first_batch = 0;  ///< the epoch's index of the window's first batch
  WindowStart start{};          ///< where the window starts
  friend bool operator==(const PlanCursor&, const PlanCursor&) = default;
};

/// Where `consumed` batches of an epoch leave its plan: what a planner that accounts for what
/// was delivered (`ReportingPlanner`) counts from.
struct PlanPoint {
  std::size_t epoch = 0;     ///< the epoch
  std::size_t consumed = 0;  ///< batches of it delivered
  bool ended = false;        ///< whether they are all of its batches
  PlanCursor cursor{};       ///< the window holding batch `consumed` (unless 0 or `ended`)
  /// That window's batches before batch `consumed`, the last delivered.
  std::vector<PlannedBatch> delivered{};
};

/// A `WindowPlanner` that gives its own account of where a loader stands, saved in the loader's
/// state (`LoaderState::plan_state`) and checked on restore: a mixture's parameters and
/// per-source counts.
///
/// Requirements:
/// 1. `p.reports_state()` says whether it does (a planner of any kind may not);
/// 2. `p.describe_state(point)` is the account of `point` (JSON; null when it does not report);
/// 3. `p.check_parameters(saved)` refuses an account saved under other parameters, naming
///    what changed; `p.check_state(saved, point)` also refuses one whose counts are not those of
///    `point`.
template <class P>
concept ReportingPlanner = WindowPlanner<P> && requires(const P& planner, const PlanPoint& point,
                                                        const nlohmann::json& saved) {
  { planner.reports_state() } -> std::convertible_to<bool>;
  { planner.describe_state(point) } -> std::same_as<nlohmann::json>;
  planner.check_parameters(saved);
  planner.check_state(saved, point);
};

/// One epoch of `P`'s plan, walked forward from a cursor; holds one plan window at a time.
template <WindowPlanner P>
class PlannedEpoch {
 public:
  /// Epoch `epoch` of `planner`'s plan, from `from` (the epoch's start by default).
  PlannedEpoch(P planner, std::size_t epoch, PlanCursor from = {})
      : planner_(std::move(planner)), epoch_(epoch), cursor_(from) {}

  /// Batch `batch` of the epoch, or null past the epoch's end. Walks forward only: `batch` may
  /// not precede the cursor's window (the pointer lives until the next call).
  [[nodiscard]] const PlannedBatch* find(std::size_t batch) {
    if (batch < cursor_.first_batch) {
      throw UsageError("stoke: batch " + std::to_string(batch) + " of epoch " +
                       std::to_string(epoch_) + " precedes plan window " +
                       std::to_string(cursor_.start.window) + ", which starts at batch " +
                       std::to_string(cursor_.first_batch) + " (a plan is walked forward)");
    }
    if (!window_) window_ = planner_.plan_window(epoch_, cursor_.start);
    while (batch >= cursor_.first_batch + window_->batches.size()) {
      if (window_->last) {
        total_ = cursor_.first_batch + window_->batches.size();
        return nullptr;
      }
      cursor_ = PlanCursor{cursor_.first_batch + window_->batches.size(), window_->next};
      window_ = planner_.plan_window(epoch_, cursor_.start);
    }
    return &window_->batches[batch - cursor_.first_batch];
  }

  /// The cursor: after `find(b)` returned a batch, the window that holds batch `b`.
  [[nodiscard]] const PlanCursor& cursor() const noexcept { return cursor_; }
  /// The epoch's number of batches, once a `find` went past the end (else nothing).
  [[nodiscard]] std::optional<std::size_t> total() const noexcept { return total_; }
  /// Which epoch this is.
  [[nodiscard]] std::size_t epoch() const noexcept { return epoch_; }
  /// The planner.
  [[nodiscard]] const P& planner() const noexcept { return planner_; }

 private:
  P planner_;
  std::size_t epoch_;
  PlanCursor cursor_;
  std::optional<WindowPlan> window_;
  std::optional<std::size_t> total_;
};

/// The number of batches in `epoch` of `planner`'s plan: a walk through every window (time
/// linear in the corpus, memory of one window).
template <WindowPlanner P>
[[nodiscard]] std::size_t count_planned_batches(const P& planner, std::size_t epoch) {
  PlannedEpoch<P> walk(planner, epoch);
  std::size_t batch = 0;
  while (walk.find(batch) != nullptr) ++batch;
  return batch;
}

}  // namespace stoke

#pragma once
/// @file
/// `PlanShare`: one device's (or rank's) share of an epoch's variable-length batch plan. The plan
/// is made once, identically everywhere; shares take whole batches of it, interleaved as `split`
/// does, so every share runs the same number of batches by construction.

#include <cstddef>
#include <optional>
#include <string>
#include <utility>

#include <stoke/core/error.hpp>
#include <stoke/data/remainder.hpp>
#include <stoke/sequences/planned_epoch.hpp>
#include <stoke/sequences/sequence_plan.hpp>
#include <stoke/sequences/sequence_plan_state.hpp>

namespace stoke {

/// One batch a share delivers.
struct ShareBatch {
  PlannedBatch batch;           ///< what to read and how to lay it out
  std::size_t epoch_batch = 0;  ///< the batch's index in the epoch's plan
  bool padding = false;         ///< whether it repeats a batch of the epoch's start (padding)
};

/// Share `index` of `count` of the epoch's plan, from a state: its `t`-th batch is batch
/// `state.consumed + t * count + index` of the epoch. The last round of `count` batches, if
/// short, is dropped (`Remainder::drop`) or completed by wrapping to the epoch's first batches,
/// marked as padding (`Remainder::pad`); `Remainder::partial` is for one share only.
template <WindowPlanner P>
class PlanShare {
 public:
  /// Share `index` of `count` of `planner`'s plan, resuming at `from` (whose fingerprint must be
  /// `planner`'s, else a `StateError`).
  PlanShare(P planner, std::size_t count, std::size_t index, Remainder remainder,
            const SequencePlanState& from)
      : walk_(planner, from.epoch, from.cursor),
        probe_(planner, from.epoch, from.cursor),
        padding_walk_(std::move(planner), from.epoch),
        count_(count),
        index_(index),
        remainder_(remainder),
        from_(from) {
    if (count == 0 || index >= count) {
      throw UsageError("stoke: share " + std::to_string(index) + " of " + std::to_string(count) +
                       " does not exist");
    }
    if (remainder == Remainder::partial && count > 1) {
      throw UsageError(
          "stoke: splitting a plan needs Remainder::drop or Remainder::pad, so that "
          "every share runs the same number of batches");
    }
    const std::uint64_t expected = walk_.planner().fingerprint();
    if (from.fingerprint != 0 && from.fingerprint != expected) {
      throw StateError("stoke: the state's plan fingerprint " + std::to_string(from.fingerprint) +
                       " is not this plan's (" + std::to_string(expected) +
                       "): another seed, lengths, sequence length, budget or window");
    }
    if (from.cursor.first_batch > from.consumed) {
      throw StateError("stoke: the state's plan window starts at batch " +
                       std::to_string(from.cursor.first_batch) + ", after the " +
                       std::to_string(from.consumed) + " batches it says were consumed");
    }
  }

  /// Share `index` of `count` of `planner`'s plan from the start of `epoch`.
  PlanShare(P planner, std::size_t count, std::size_t index, Remainder remainder,
            std::size_t epoch = 0)
      : PlanShare(planner, count, index, remainder,
                  SequencePlanState{.epoch = epoch, .fingerprint = planner.fingerprint()}) {}

  /// The share's next batch of the epoch, or nothing at the epoch's end.
  [[nodiscard]] std::optional<ShareBatch> next() {
    const std::size_t round = from_.consumed + delivered_ * count_;
    if (!round_exists(round)) return std::nullopt;
    const std::size_t batch = round + index_;
    ++delivered_;
    if (const PlannedBatch* found = walk_.find(batch)) return ShareBatch{*found, batch, false};
    const std::size_t total = *walk_.total();  // found nothing: walked past the end
    const std::size_t wrapped = (batch - total) % total;
    return ShareBatch{*padding_walk_.find(wrapped), wrapped, true};
  }

  /// Batches this share delivered since it was made.
  [[nodiscard]] std::size_t delivered() const noexcept { return delivered_; }

  /// The state of the split after every share delivered as many batches as this one (shares
  /// run in lockstep): at the epoch's end, the start of the next epoch.
  [[nodiscard]] SequencePlanState state() {
    const std::size_t consumed = from_.consumed + delivered_ * count_;
    const std::uint64_t fingerprint = walk_.planner().fingerprint();
    if (!round_exists(consumed)) return SequencePlanState{walk_.epoch() + 1, 0, {}, fingerprint};
    (void)walk_.find(consumed);
    return SequencePlanState{walk_.epoch(), consumed, walk_.cursor(), fingerprint};
  }

 private:
  /// Whether a round of batches starting at batch `first` runs: its last batch exists under
  /// `Remainder::drop`, its first otherwise.
  [[nodiscard]] bool round_exists(std::size_t first) {
    const std::size_t needed = remainder_ == Remainder::drop ? first + count_ - 1 : first;
    return probe_.find(needed) != nullptr;
  }

  PlannedEpoch<P> walk_;          ///< the share's own batches, and where a state resumes
  PlannedEpoch<P> probe_;         ///< ahead of `walk_`: whether each round runs
  PlannedEpoch<P> padding_walk_;  ///< the epoch's first batches, for padding
  std::size_t count_;
  std::size_t index_;
  Remainder remainder_;
  SequencePlanState from_;
  std::size_t delivered_ = 0;
};

}  // namespace stoke

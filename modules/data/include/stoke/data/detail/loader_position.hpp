#pragma once
/// @file
/// `detail::LoaderPosition`: where a loader stands (the next epoch, how far the consumer got
/// in the current one), the `LoaderState` it saves and the checks of one it restores.

#include <cstddef>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>

#include <stoke/core/error.hpp>
#include <stoke/data/batch_range.hpp>
#include <stoke/data/detail/epoch_ledger.hpp>
#include <stoke/data/epoch_plan.hpp>
#include <stoke/data/options.hpp>
#include <stoke/data/state.hpp>

namespace stoke::detail {

/// The epoch a loader loads next and its progress through the current one. A copy shares the
/// source's epoch ledger (see `EpochLedger`) and starts with the same epoch and progress.
class LoaderPosition {
 public:
  LoaderPosition() = default;
  /// Shares `other`'s ledger; copies its epoch and progress.
  LoaderPosition(const LoaderPosition& other)
      : next_epoch_(other.next_epoch_), epoch_chosen_(other.epoch_chosen_), ledger_(other.ledger_) {
    const std::lock_guard lock(other.progress_->mutex);
    progress_->active = other.progress_->active;
    progress_->epoch = other.progress_->epoch;
    progress_->delivered = other.progress_->delivered;
    progress_->num_batches = other.progress_->num_batches;
    progress_->offset = other.progress_->offset;
  }
  LoaderPosition& operator=(const LoaderPosition& other) {
    if (this != &other) *this = LoaderPosition(other);
    return *this;
  }
  LoaderPosition(LoaderPosition&&) noexcept = default;
  LoaderPosition& operator=(LoaderPosition&&) noexcept = default;
  ~LoaderPosition() = default;

  /// The epoch the next `begin_epoch` loads.
  [[nodiscard]] std::size_t epoch() const noexcept { return next_epoch_; }
  /// Makes the next `begin_epoch` load `epoch`, also one already loaded.
  void set_epoch(std::size_t epoch) noexcept {
    next_epoch_ = epoch;
    epoch_chosen_ = true;
  }
  /// Starts a ledger of its own (a slice or a share is a loader of its own).
  void detach() { ledger_ = std::make_shared<EpochLedger>(); }

  /// Begins the next epoch of `plan`: refuses an epoch the ledger already saw, advances the
  /// epoch and resets the progress. Returns the epoch's layout.
  EpochLayout begin_epoch(const EpochPlan& plan) {
    // A chosen epoch starts a new line of epochs: this loader (and its later copies) go on
    // from there, apart from what its source did.
    if (std::exchange(epoch_chosen_, false)) detach();
    ledger_->begin(next_epoch_);
    EpochLayout layout = plan.layout(next_epoch_++);
    const std::lock_guard lock(progress_->mutex);
    progress_->active = true;
    progress_->epoch = layout.epoch;
    progress_->delivered = 0;
    progress_->num_batches = layout.num_batches;
    progress_->offset = layout.offset;
    return layout;
  }

  /// The progress the current epoch's feed counts in.
  [[nodiscard]] const std::shared_ptr<Progress>& progress() const noexcept { return progress_; }

  /// {seed, epoch, positions of the epoch consumed by all shares of `plan`'s split together}.
  [[nodiscard]] LoaderState state(const EpochPlan& plan, const LoaderOptions& options) const {
    if (plan.has_slices()) {
      throw UsageError(
          "stoke: state() is defined for a loader and its split shares, not for a slice");
    }
    LoaderState state{options.seed,        next_epoch_,     0,
                      plan.dataset_size(), options.shuffle, options.shard_aware,
                      options.remainder};
    state.plan_fingerprint = plan.fingerprint();
    const std::lock_guard lock(progress_->mutex);
    const auto record = [&](std::size_t epoch, const ResumePoint& point) {
      state.epoch = epoch;
      state.consumed = point.consumed;
      state.shard_ranks = point.shard_ranks;
      state.rank_consumed = point.rank_consumed;
      return state;
    };
    const auto at_start = [&](std::size_t epoch) {
      return record(epoch, plan.resume_point(plan.layout(epoch), 0).value_or(ResumePoint{}));
    };
    if (!progress_->active || progress_->delivered >= progress_->num_batches) {
      return at_start(next_epoch_);
    }
    const auto point = plan.resume_point(plan.layout(progress_->epoch), progress_->delivered);
    if (!point) return at_start(next_epoch_);  // only padding is left
    return record(progress_->epoch, *point);
  }

  /// `state(plan, options)` with the plan's own account (`LoaderState::plan_state`), made
  /// outside the progress lock (it may plan a window).
  [[nodiscard]] LoaderState described_state(const EpochPlan& plan,
                                            const LoaderOptions& options) const {
    LoaderState out = state(plan, options);
    out.plan_state = plan.describe(out.epoch, out.consumed);
    return out;
  }

  /// Resumes from `state`: the next epoch is the rest of `state.epoch`, split over `plan`'s
  /// shares. A state of another dataset size, seed or order is refused naming the mismatch.
  void restore(const LoaderState& state, EpochPlan& plan, const LoaderOptions& options) {
    const auto mismatch = [](const char* what, auto saved, auto here) {
      throw InputError(std::string("stoke: cannot restore loader state: it was saved with ") +
                       what + " " + std::to_string(saved) + ", this loader has " +
                       std::to_string(here));
    };
    plan.check(state.plan_state, state.epoch, state.consumed);  // names what changed in it
    if (state.dataset_size != plan.dataset_size()) {
      mismatch("dataset size", state.dataset_size, plan.dataset_size());
    }
    if (state.shuffle != options.shuffle) mismatch("shuffle", state.shuffle, options.shuffle);
    if (state.shard_aware != options.shard_aware) {
      mismatch("shard_aware", state.shard_aware, options.shard_aware);
    }
    if (state.seed != options.seed) mismatch("seed", state.seed, options.seed);
    if (state.remainder != options.remainder) {
      throw InputError(std::string("stoke: cannot restore loader state: it was saved with "
                                   "remainder ") +
                       std::string(remainder_name(state.remainder)) + ", this loader has " +
                       std::string(remainder_name(options.remainder)));
    }
    if (state.plan_fingerprint != plan.fingerprint()) {
      throw InputError(
          "stoke: cannot restore loader state: it was saved with plan fingerprint " +
          std::to_string(state.plan_fingerprint) + ", this loader's plan has " +
          std::to_string(plan.fingerprint()) +
          " (0 is a loader of samples; otherwise another kind of plan, seed, lengths, sequence "
          "length, rows, budget or window)");
    }
    if (plan.planned()) {
      const std::size_t batches = plan.epoch_positions(state.epoch);
      if (state.consumed > batches) {
        throw InputError("stoke: cannot restore loader state: it says " +
                         std::to_string(state.consumed) + " planned batches of epoch " +
                         std::to_string(state.epoch) + " were consumed, more than the " +
                         std::to_string(batches) + " of its plan");
      }
    }
    for (const auto& [name, value] :
         {std::pair{"", state.consumed}, std::pair{" by each rank", state.rank_consumed}}) {
      if (!plan.planned() && value > state.dataset_size) {
        throw InputError("stoke: cannot restore loader state: it says " + std::to_string(value) +
                         " positions of the epoch were consumed" + name +
                         ", more than its dataset size " + std::to_string(state.dataset_size));
      }
    }
    if (state.shard_ranks != 0 && !plan.shard_ranks()) {
      throw InputError(
          "stoke: cannot restore loader state: it was saved under the shard rank "
          "split (" +
          std::to_string(state.shard_ranks) +
          " ranks), and this loader splits ranks by interleaving; use share_by_shards");
    }
    set_epoch(state.epoch);
    plan.resume_at(state.epoch,
                   ResumePoint{state.consumed, state.shard_ranks, state.rank_consumed});
    const std::lock_guard lock(progress_->mutex);
    progress_->active = false;
  }

 private:
  std::size_t next_epoch_ = 0;
  bool epoch_chosen_ = false;  ///< `set_epoch` or `restore` chose the next epoch
  std::shared_ptr<EpochLedger> ledger_ = std::make_shared<EpochLedger>();
  std::shared_ptr<Progress> progress_ = std::make_shared<Progress>();
};

}  // namespace stoke::detail

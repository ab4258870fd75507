#pragma once
/// @file
/// `detail::LoaderBase`: the interface every stoke loader shares (`BatchLoader`,
/// `MultiThreadLoader`): its source, device and plan, its epochs, its splits, its state.
/// The batches themselves are made by `EpochBatches`. With a `PlanBatcher`, the loader's
/// positions are the batches of each epoch's plan (see `EpochPlan`).

#include <cstddef>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include <stoke/core/backend.hpp>
#include <stoke/data/batch.hpp>
#include <stoke/data/batch_range.hpp>
#include <stoke/data/batcher.hpp>
#include <stoke/data/dataset.hpp>
#include <stoke/data/detail/any_epoch_order.hpp>
#include <stoke/data/detail/epoch_batches.hpp>
#include <stoke/data/detail/loader_position.hpp>
#include <stoke/data/detail/loader_source.hpp>
#include <stoke/data/detail/thread_names.hpp>
#include <stoke/data/epoch_plan.hpp>
#include <stoke/data/options.hpp>
#include <stoke/data/plan_batcher.hpp>
#include <stoke/data/sharded_order.hpp>
#include <stoke/data/state.hpp>

namespace stoke::detail {

/// Base of `BatchLoader` and `MultiThreadLoader` (CRTP: `slice` and `share` return `Derived`).
template <class Derived, Dataset S, class T, Backend B>
  requires LoaderBatcher<T, B, S>
class LoaderBase {
 public:
  using backend_type = B;                              ///< the backend batches are for
  using device_type = device_t<B>;                     ///< where batches go
  using item_type = dataset_item_t<S>;                 ///< one sample
  using batch_type = Batch<loader_output_t<T, B, S>>;  ///< what `iter()` yields

  /// A loader over `dataset`, batching with `batcher` for `device`.
  LoaderBase(S dataset, T batcher, const LoaderOptions& options, device_type device = {})
      : source_(std::make_shared<const LoaderSource<S, T>>(std::move(dataset), std::move(batcher),
                                                           options)),
        device_(std::move(device)),
        options_(options),
        plan_(make_plan(source_, options)) {}

  /// A copy shares the dataset and batcher, and starts with the same epoch and progress. It
  /// also shares the source's epoch ledger: beginning an epoch that the source or another of
  /// its copies already began throws, unless `set_epoch` or `restore` chose it.
  LoaderBase(const LoaderBase&) = default;
  LoaderBase& operator=(const LoaderBase&) = default;
  LoaderBase(LoaderBase&&) noexcept = default;
  LoaderBase& operator=(LoaderBase&&) noexcept = default;
  ~LoaderBase() = default;

  /// Items the next epoch yields, padding included.
  [[nodiscard]] std::size_t num_items() const { return plan_.layout(epoch()).length; }
  /// Batches the next epoch yields.
  [[nodiscard]] std::size_t num_batches() const { return plan_.layout(epoch()).num_batches; }
  /// Items the next epoch yields that repeat other positions (padding, `Remainder::pad`).
  [[nodiscard]] std::size_t num_padded() const { return plan_.layout(epoch()).padding; }
  /// Samples no share of the split reads in the next epoch (`Remainder::drop`).
  [[nodiscard]] std::size_t num_dropped() const { return plan_.layout(epoch()).dropped; }
  /// The shape of `epoch` for this loader: batches, padding, dropped samples.
  [[nodiscard]] EpochLayout layout(std::size_t epoch) const { return plan_.layout(epoch); }

  /// The device batches are made for.
  [[nodiscard]] const device_type& device() const noexcept { return device_; }
  /// Makes later batches for `device`.
  void set_device(const device_type& device) { device_ = device; }

  /// The epoch the next `iter()` loads; each `iter()` advances it by one.
  [[nodiscard]] std::size_t epoch() const noexcept { return position_.epoch(); }
  /// Makes the next `iter()` load `epoch` from its start, also an epoch this loader or a
  /// copy of it already loaded; the epochs after it follow as usual.
  void set_epoch(std::size_t epoch) noexcept { position_.set_epoch(epoch); }

  /// The loader's settings.
  [[nodiscard]] const LoaderOptions& options() const noexcept { return options_; }
  /// Which positions each epoch reads.
  [[nodiscard]] const EpochPlan& plan() const noexcept { return plan_; }
  /// The dataset.
  [[nodiscard]] const S& dataset() const noexcept { return source_->dataset(); }
  /// The batcher (shared with the loader's copies, slices and shares).
  [[nodiscard]] const T& batcher() const noexcept { return source_->batcher(); }

  /// A loader over positions `[begin, end)` of this loader's epoch sequence (clamped to it).
  /// Slices of one loader share its epoch order, so disjoint slices read disjoint samples.
  [[nodiscard]] Derived slice(std::size_t begin, std::size_t end) const {
    Derived copy(self());
    copy.plan_.add_slice(begin, end);
    copy.position_.detach();
    return copy;
  }

  /// Share `index` of `count`: every `count`-th batch of this loader, starting with batch
  /// `index`. The shares have equal batch counts (remainder dropped or padded), are disjoint,
  /// and together cover the epoch; see `split`.
  [[nodiscard]] Derived share(std::size_t count, std::size_t index) const {
    Derived copy(self());
    copy.plan_.add_share(count, index);
    copy.position_.detach();
    return copy;
  }

  /// Rank `index` of `count` ranks that each take whole shards of every epoch, balanced by
  /// samples and dealt anew every epoch from the seed (see `ShardAssignment`): no two ranks
  /// read the same shard. Split it over the rank's devices as usual; every device of every
  /// rank gets the same number of batches. Needs `shuffle_shards` over a `ShardedDataset`, and
  /// must be the loader's first split.
  [[nodiscard]] Derived share_by_shards(std::size_t count, std::size_t index) const {
    Derived copy(self());
    copy.plan_.add_shard_ranks(count, index, source_->shard_table(), options_.seed);
    copy.position_.detach();
    return copy;
  }

  /// Where this loader stands: {seed, epoch, positions of the epoch consumed by all shares of
  /// its split together}. Taken inside the loop body, it counts the batch being processed.
  /// Defined for a loader and its shares, not for slices.
  [[nodiscard]] LoaderState state() const { return position_.described_state(plan_, options_); }

  /// Resumes from `state`: the next `iter()` loads the rest of `state.epoch`. The remaining
  /// positions are split over this loader's shares, whatever their number was when the state
  /// was taken. A state of another dataset size, seed or order is refused naming the mismatch.
  void restore(const LoaderState& state) { position_.restore(state, plan_, options_); }

  /// The order of `epoch`: a bijection from positions to dataset indices.
  [[nodiscard]] AnyEpochOrder order(std::size_t epoch) const { return source_->order(epoch); }

 protected:
  /// Begins the next epoch (advancing the epoch counter, resetting the progress): its
  /// batches, to be made on any thread, in up to `max_chunks` chunks each if the batcher
  /// fills batches in chunks. A dataset that reads shards ahead is told the epoch's shards.
  std::shared_ptr<const EpochBatches<S, T, B>> begin_epoch(std::size_t max_chunks = 0) {
    auto batches = std::make_shared<const EpochBatches<S, T, B>>(
        source_, device_, options_.seed, plan_, position_.begin_epoch(plan_), max_chunks);
    if constexpr (ReadAheadShardedDataset<S>) {
      const std::vector<std::size_t> shards = batches->shard_visits();
      if (!shards.empty()) source_->dataset().read_ahead(shards);
    }
    return batches;
  }

  /// The progress the feed of the current epoch counts in.
  [[nodiscard]] const std::shared_ptr<Progress>& progress() const noexcept {
    return position_.progress();
  }

  /// The batches of the next epoch, each made in the consumer's thread as the range advances.
  [[nodiscard]] BatchRange<batch_type> iter_in_caller() {
    return BatchRange<batch_type>(std::make_unique<CallerFeed>(begin_epoch(), progress()));
  }

 private:
  /// Makes each batch in the thread that asks for it.
  class CallerFeed final : public LoaderFeed<batch_type> {
   public:
    CallerFeed(std::shared_ptr<const EpochBatches<S, T, B>> batches,
               std::shared_ptr<Progress> progress)
        : LoaderFeed<batch_type>(std::move(progress)), batches_(std::move(batches)) {}

   private:
    std::optional<batch_type> produce() override {
      if (step_ >= batches_->num_batches()) return std::nullopt;
      return batches_->make(step_++, caller_thread);
    }

    std::shared_ptr<const EpochBatches<S, T, B>> batches_;
    std::size_t step_ = 0;
  };

  const Derived& self() const { return static_cast<const Derived&>(*this); }

  /// The plan of a loader over `source`: of samples in batches of `options.batch_size`, or,
  /// with a `PlanBatcher`, of its planned batches (the planner orders and sizes them, so the
  /// loader's own shuffle, shard order and batch size must be left unset).
  static EpochPlan make_plan(const std::shared_ptr<const LoaderSource<S, T>>& source,
                             const LoaderOptions& options) {
    if constexpr (is_plan_batcher_v<T, B, S>) {
      if (options.shuffle || options.shard_aware || options.batch_size != 1) {
        throw UsageError(
            "stoke: a loader whose batcher plans its batches takes its order and batch sizes "
            "from the plan: leave shuffle, shuffle_shards and batch_size unset (shuffle and "
            "size in the planner's options)");
      }
      PlannedBatches planned{.epoch_batches = [source](std::size_t epoch) -> std::size_t {
                               return source->batcher().epoch_batches(epoch);
                             },
                             .fingerprint = source->batcher().plan_fingerprint()};
      if constexpr (requires { source->batcher().plan_state(std::size_t{}, std::size_t{}); }) {
        planned.describe = [source](std::size_t epoch, std::size_t consumed) {
          return source->batcher().plan_state(epoch, consumed);
        };
        planned.check = [source](const nlohmann::json& saved, std::size_t epoch,
                                 std::size_t consumed) {
          source->batcher().check_plan_state(saved, epoch, consumed);
        };
      }
      return EpochPlan(source->size(), std::move(planned), options.remainder);
    } else {
      return EpochPlan(source->size(), options.batch_size, options.remainder);
    }
  }

  std::shared_ptr<const LoaderSource<S, T>> source_;
  device_type device_;
  LoaderOptions options_;
  EpochPlan plan_;
  LoaderPosition position_;
};

}  // namespace stoke::detail

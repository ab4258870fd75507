#pragma once
/// @file
/// What every stoke loader shares: the dataset and batcher, the device, the plan of which
/// positions each epoch reads, the epoch counter and progress, and how one batch is made.

#include <algorithm>
#include <cstddef>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include <stoke/core/backend.hpp>
#include <stoke/core/error.hpp>
#include <stoke/data/batch.hpp>
#include <stoke/data/batcher.hpp>
#include <stoke/data/dataset.hpp>
#include <stoke/data/detail/batch_parts.hpp>
#include <stoke/data/detail/batch_range.hpp>
#include <stoke/data/detail/epoch_ledger.hpp>
#include <stoke/data/options.hpp>
#include <stoke/data/order.hpp>
#include <stoke/data/plan.hpp>
#include <stoke/data/sample_context.hpp>
#include <stoke/data/sharded_order.hpp>
#include <stoke/data/state.hpp>

namespace stoke::detail {

/// The dataset, batcher and shard table, shared (immutable) by a loader, its copies, slices
/// and workers.
template <class S, class T>
struct LoaderSource {
  S dataset;
  T batcher;
  std::shared_ptr<const ShardTable> shards;  ///< set for shard-aware shuffling
};

/// The order of one epoch: plain (identity or Feistel) or shard-aware.
class AnyEpochOrder {
 public:
  explicit AnyEpochOrder(EpochOrder order) : order_(std::move(order)) {}
  explicit AnyEpochOrder(ShardedEpochOrder order) : order_(std::move(order)) {}
  /// The dataset index at `position`.
  [[nodiscard]] std::size_t operator()(std::size_t position) const {
    return std::visit([position](const auto& order) { return order(position); }, order_);
  }
  /// Replaces every position in `positions` by its dataset index.
  void map(std::span<std::size_t> positions) const {
    if (const auto* plain = std::get_if<EpochOrder>(&order_)) {
      plain->map(positions);
    } else {
      const auto& sharded = std::get<ShardedEpochOrder>(order_);
      for (std::size_t& position : positions) position = sharded(position);
    }
  }

 private:
  std::variant<EpochOrder, ShardedEpochOrder> order_;
};

/// One epoch being loaded: its layout and its order, computed once and shared by workers.
struct EpochWork {
  EpochLayout layout;
  AnyEpochOrder order;
};

/// How far the consumer got in the epoch it iterates; shared with that epoch's range.
struct Progress {
  std::mutex mutex;
  bool active = false;        ///< an epoch was started with `iter()`
  std::size_t epoch = 0;      ///< the epoch started last
  std::size_t delivered = 0;  ///< its batches handed to the consumer
  std::size_t num_batches = 0;
  std::size_t offset = 0;  ///< positions of that epoch skipped on resume
};

/// Base of `BatchLoader` and `MultiThreadLoader` (CRTP: `slice` and `part` return `Derived`).
template <class Derived, Dataset S, class T, Backend B>
  requires Batcher<T, B, dataset_item_t<S>>
class LoaderBase {
 public:
  using device_type = device_t<B>;                            ///< where batches go
  using item_type = dataset_item_t<S>;                        ///< one sample
  using batch_type = Batch<batch_output_t<T, B, item_type>>;  ///< what `iter()` yields

  /// A loader over `dataset`, batching with `batcher` for `device`.
  LoaderBase(S dataset, T batcher, const LoaderOptions& options, device_type device = {})
      : source_(make_source(std::move(dataset), std::move(batcher), options)),
        device_(std::move(device)),
        options_(options),
        plan_(static_cast<std::size_t>(source_->dataset.size()), options.batch_size,
              options.remainder) {}

  /// A copy shares the dataset and batcher, and starts with the same epoch and progress. It
  /// also shares the source's epoch ledger: beginning an epoch that the source or another of
  /// its copies already began throws, unless `set_epoch` or `restore` chose it.
  LoaderBase(const LoaderBase& other)
      : source_(other.source_),
        device_(other.device_),
        options_(other.options_),
        plan_(other.plan_),
        next_epoch_(other.next_epoch_),
        epoch_chosen_(other.epoch_chosen_),
        ledger_(other.ledger_) {
    std::lock_guard lock(other.progress_->mutex);
    progress_->active = other.progress_->active;
    progress_->epoch = other.progress_->epoch;
    progress_->delivered = other.progress_->delivered;
    progress_->num_batches = other.progress_->num_batches;
    progress_->offset = other.progress_->offset;
  }
  LoaderBase& operator=(const LoaderBase& other) {
    if (this != &other) *this = LoaderBase(other);
    return *this;
  }
  LoaderBase(LoaderBase&&) noexcept = default;
  LoaderBase& operator=(LoaderBase&&) noexcept = default;
  ~LoaderBase() = default;

  /// Items the next epoch yields, padding included.
  [[nodiscard]] std::size_t num_items() const { return plan_.layout(next_epoch_).length; }
  /// Batches the next epoch yields.
  [[nodiscard]] std::size_t num_batches() const { return plan_.layout(next_epoch_).num_batches; }
  /// The shape of `epoch` for this loader: batches, padding, dropped samples.
  [[nodiscard]] EpochLayout layout(std::size_t epoch) const { return plan_.layout(epoch); }

  /// The device batches are made for.
  [[nodiscard]] const device_type& device() const noexcept { return device_; }
  /// Makes later batches for `device`.
  void set_device(const device_type& device) { device_ = device; }

  /// The epoch the next `iter()` loads; each `iter()` advances it by one.
  [[nodiscard]] std::size_t epoch() const noexcept { return next_epoch_; }
  /// Makes the next `iter()` load `epoch` from its start, also an epoch this loader or a
  /// copy of it already loaded; the epochs after it follow as usual.
  void set_epoch(std::size_t epoch) noexcept {
    next_epoch_ = epoch;
    epoch_chosen_ = true;
  }

  /// The loader's settings.
  [[nodiscard]] const LoaderOptions& options() const noexcept { return options_; }
  /// Which positions each epoch reads.
  [[nodiscard]] const Plan& plan() const noexcept { return plan_; }
  /// The dataset.
  [[nodiscard]] const S& dataset() const noexcept { return source_->dataset; }

  /// A loader over positions `[begin, end)` of this loader's epoch sequence (clamped to it).
  /// Slices of one loader share its epoch order, so disjoint slices read disjoint samples.
  [[nodiscard]] Derived slice(std::size_t begin, std::size_t end) const {
    Derived copy(self());
    copy.plan_.add_slice(begin, end);
    copy.ledger_ = std::make_shared<EpochLedger>();
    return copy;
  }

  /// Part `index` of `count`: every `count`-th batch of this loader, starting with batch
  /// `index`. The parts have equal batch counts (remainder dropped or padded), are disjoint,
  /// and together cover the epoch; see `split`.
  [[nodiscard]] Derived part(std::size_t count, std::size_t index) const {
    Derived copy(self());
    copy.plan_.add_part(count, index);
    copy.ledger_ = std::make_shared<EpochLedger>();
    return copy;
  }

  /// Where this loader stands: {seed, epoch, positions of the epoch consumed by all parts of
  /// its split together}. Taken inside the loop body, it counts the batch being processed.
  /// Defined for a loader and its parts, not for slices.
  [[nodiscard]] LoaderState state() const {
    if (plan_.has_slices()) {
      throw UsageError(
          "stoke: state() is defined for a loader and its split parts, not for a slice");
    }
    LoaderState state{options_.seed,        next_epoch_,      0,
                      plan_.dataset_size(), options_.shuffle, options_.shard_aware};
    std::lock_guard lock(progress_->mutex);
    if (!progress_->active || progress_->delivered >= progress_->num_batches) {
      const EpochLayout next = plan_.layout(next_epoch_);
      state.consumed = next.offset;
      return state;
    }
    const std::size_t consumed =
        progress_->offset + progress_->delivered * plan_.batch_size() * plan_.part_count();
    if (consumed >= plan_.dataset_size()) return state;  // only padding is left
    state.epoch = progress_->epoch;
    state.consumed = consumed;
    return state;
  }

  /// Resumes from `state`: the next `iter()` loads the rest of `state.epoch`. The remaining
  /// positions are split over this loader's parts, whatever their number was when the state
  /// was taken. A state of another dataset size, seed or order is refused naming the mismatch.
  void restore(const LoaderState& state) {
    const auto mismatch = [](const char* what, auto saved, auto here) {
      throw InputError(std::string("stoke: cannot restore loader state: it was saved with ") +
                       what + " " + std::to_string(saved) + ", this loader has " +
                       std::to_string(here));
    };
    if (state.dataset_size != plan_.dataset_size()) {
      mismatch("dataset size", state.dataset_size, plan_.dataset_size());
    }
    if (state.shuffle != options_.shuffle) mismatch("shuffle", state.shuffle, options_.shuffle);
    if (state.shard_aware != options_.shard_aware) {
      mismatch("shard_aware", state.shard_aware, options_.shard_aware);
    }
    if (state.seed != options_.seed) mismatch("seed", state.seed, options_.seed);
    if (state.consumed > state.dataset_size) {
      mismatch("consumed positions beyond the dataset size", state.consumed, state.dataset_size);
    }
    next_epoch_ = state.epoch;
    epoch_chosen_ = true;
    plan_.resume_at(state.epoch, state.consumed);
    std::lock_guard lock(progress_->mutex);
    progress_->active = false;
  }

  /// The order of `epoch`: a bijection from positions to dataset indices.
  [[nodiscard]] AnyEpochOrder order(std::size_t epoch) const {
    const std::size_t size = plan_.dataset_size();
    if (source_->shards)
      return AnyEpochOrder(ShardedEpochOrder(source_->shards, options_.seed, epoch));
    return AnyEpochOrder(options_.shuffle ? EpochOrder(size, options_.seed, epoch)
                                          : EpochOrder(size));
  }

  /// Makes batch `step` of `work`, in the calling thread. While it reads and batches,
  /// `stoke::sample_rng()` gives each sample's stream. Failures are rethrown as `DataError`
  /// naming the index, `worker` and device.
  [[nodiscard]] batch_type make_batch(const EpochWork& work, std::size_t step,
                                      const std::string& worker) const {
    StepItems read = read_step(work, step, worker);
    const SampleContext context{options_.seed, work.layout.epoch, read.indices, std::nullopt};
    const SampleContextScope scope(context);
    try {
      return batch_type{source_->batcher.batch(std::move(read.items), device_), work.layout.epoch,
                        step, read.padding, std::move(read.indices)};
    } catch (...) {
      fail(work.layout, step, read.indices.empty() ? 0 : read.indices.front(), "batch", worker);
    }
  }

  /// Batch `step` of `work` read and allocated by the `PartBatcher`, in the calling thread,
  /// to be filled in up to `max_parts` row ranges on any threads. `worker` names this thread
  /// in errors, `part_worker` the thread of a part.
  [[nodiscard]] std::shared_ptr<StepParts<batch_type>> open_batch(
      const EpochWork& work, std::size_t step, std::size_t max_parts, const std::string& worker,
      std::function<std::string(std::size_t)> part_worker) const
    requires PartBatcher<T, B, item_type>
  {
    StepItems read = read_step(work, step, worker);
    const SampleContext context{options_.seed, work.layout.epoch, read.indices, std::nullopt};
    const SampleContextScope scope(context);
    using Pending = decltype(source_->batcher.begin_batch(std::move(read.items), device_));
    try {
      return std::make_shared<BatchParts<batch_output_t<T, B, item_type>, Pending>>(
          source_->batcher.begin_batch(std::move(read.items), device_), max_parts,
          DataErrorContext{work.layout.epoch, step, 0, "batch", worker, device_name(device_)},
          options_.seed, std::move(read.indices), read.padding, std::move(part_worker));
    } catch (...) {
      fail(work.layout, step, read.indices.empty() ? 0 : read.indices.front(), "batch", worker);
    }
  }

 private:
  /// The items of one batch read from the dataset, with their dataset indices.
  struct StepItems {
    std::vector<item_type> items;
    std::vector<std::size_t> indices;
    std::size_t padding = 0;  ///< how many trailing items are padding
  };

  /// Reads the items of batch `step` of `work`, in the calling thread, with each sample's
  /// context installed; a failed read is rethrown as `DataError`.
  [[nodiscard]] StepItems read_step(const EpochWork& work, std::size_t step,
                                    const std::string& worker) const {
    const EpochLayout& layout = work.layout;
    const std::size_t b = plan_.batch_size();
    const std::size_t first = step * b;
    const std::size_t count = std::min(b, layout.length - first);
    StepItems read;
    read.indices.resize(count);
    plan_.locate(layout, first, read.indices);
    work.order.map(read.indices);
    read.padding = first + count - std::clamp(layout.pad_from, first, first + count);
    const std::vector<std::size_t>& indices = read.indices;

    SampleContext context{options_.seed, layout.epoch, indices, std::nullopt};
    const SampleContextScope scope(context);
    std::vector<item_type>& items = read.items;
    items.reserve(count);
    const S& dataset = source_->dataset;
    if constexpr (requires { dataset.get_many(std::span<const std::size_t>(indices), items); }) {
      try {
        dataset.get_many(std::span<const std::size_t>(indices), items);
      } catch (...) {
        fail(layout, step, count == 0 ? 0 : indices.front(), "get_many", worker);
      }
    } else {
      for (std::size_t i = 0; i < count; ++i) {
        context.item = i;
        try {
          items.push_back(dataset.get(indices[i]));
        } catch (...) {
          fail(layout, step, indices[i], "get", worker);
        }
      }
      context.item.reset();
    }
    return read;
  }

 protected:
  /// Lays out the next epoch, advances the epoch counter and resets the progress.
  std::shared_ptr<const EpochWork> begin_epoch() {
    // A chosen epoch starts a new line of epochs: this loader (and its later copies) go on
    // from there, apart from what its source did.
    if (std::exchange(epoch_chosen_, false)) ledger_ = std::make_shared<EpochLedger>();
    ledger_->begin(next_epoch_);
    const std::size_t epoch = next_epoch_++;
    auto work = std::make_shared<const EpochWork>(EpochWork{plan_.layout(epoch), order(epoch)});
    std::lock_guard lock(progress_->mutex);
    progress_->active = true;
    progress_->epoch = epoch;
    progress_->delivered = 0;
    progress_->num_batches = work->layout.num_batches;
    progress_->offset = work->layout.offset;
    return work;
  }

  /// A range over the epoch's batches pulled from `next`, counting each one delivered.
  template <class Next>
  [[nodiscard]] BatchRange<batch_type> deliver(Next next, std::function<void()> on_drop = {}) {
    return BatchRange<batch_type>(
        [next = std::move(next), progress = progress_]() mutable -> std::optional<batch_type> {
          std::optional<batch_type> batch = next();
          if (batch) {
            std::lock_guard lock(progress->mutex);
            ++progress->delivered;
          }
          return batch;
        },
        std::move(on_drop));
  }

  /// The batches of the next epoch, each made in the consumer's thread as the range advances.
  [[nodiscard]] BatchRange<batch_type> iter_in_caller() {
    auto work = begin_epoch();
    return deliver(
        [loader = *this, work, step = std::size_t{0}]() mutable -> std::optional<batch_type> {
          if (step >= work->layout.num_batches) return std::nullopt;
          return loader.make_batch(*work, step++, "caller");
        });
  }

 private:
  static std::shared_ptr<const LoaderSource<S, T>> make_source(S dataset, T batcher,
                                                               const LoaderOptions& options) {
    std::shared_ptr<const ShardTable> shards;
    if (options.shard_aware) {
      if constexpr (ShardedDataset<S>) {
        const auto& begins = dataset.shard_begins();
        shards = std::make_shared<const ShardTable>(
            std::vector<std::size_t>(std::ranges::begin(begins), std::ranges::end(begins)),
            static_cast<std::size_t>(dataset.size()));
      } else {
        throw UsageError("stoke: shard-aware shuffling needs a dataset with shard_begins()");
      }
    }
    return std::make_shared<const LoaderSource<S, T>>(
        LoaderSource<S, T>{std::move(dataset), std::move(batcher), std::move(shards)});
  }

  [[noreturn]] void fail(const EpochLayout& layout, std::size_t step, std::size_t index,
                         const char* stage, const std::string& worker) const {
    throw DataError(
        DataErrorContext{layout.epoch, step, index, stage, worker, device_name(device_)},
        current_exception_message());
  }

  const Derived& self() const { return static_cast<const Derived&>(*this); }

  std::shared_ptr<const LoaderSource<S, T>> source_;
  device_type device_;
  LoaderOptions options_;
  Plan plan_;
  std::size_t next_epoch_ = 0;
  bool epoch_chosen_ = false;  ///< `set_epoch` or `restore` chose the next epoch
  std::shared_ptr<EpochLedger> ledger_ = std::make_shared<EpochLedger>();
  std::shared_ptr<Progress> progress_ = std::make_shared<Progress>();
};

}  // namespace stoke::detail

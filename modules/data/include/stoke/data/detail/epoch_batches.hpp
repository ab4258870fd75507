#pragma once
/// @file
/// `detail::EpochBatches`: how the batches of one epoch of a loader are made, on whichever
/// thread asks: the positions of a batch mapped to dataset indices, the samples read, the
/// batcher run, failures rethrown as `DataError`. With a `PlanBatcher`, a batch's one position
/// is the index of a batch of the epoch's plan, which the batcher makes from the dataset.

#include <algorithm>
#include <cstddef>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include <stoke/core/backend.hpp>
#include <stoke/core/error.hpp>
#include <stoke/data/batch.hpp>
#include <stoke/data/batcher.hpp>
#include <stoke/data/dataset.hpp>
#include <stoke/data/detail/any_epoch_order.hpp>
#include <stoke/data/detail/batch_chunks.hpp>
#include <stoke/data/detail/batch_maker.hpp>
#include <stoke/data/detail/loader_source.hpp>
#include <stoke/data/detail/thread_names.hpp>
#include <stoke/data/detail/worker_activity.hpp>
#include <stoke/data/epoch_plan.hpp>
#include <stoke/data/plan_batcher.hpp>
#include <stoke/data/sample_context.hpp>

namespace stoke::detail {

/// The batches of one epoch of a loader, each made on the thread that asks for it. Immutable:
/// the loader's workers share one per epoch.
template <Dataset S, class T, Backend B>
  requires LoaderBatcher<T, B, S>
class EpochBatches final : public BatchMaker<Batch<loader_output_t<T, B, S>>> {
 public:
  using item_type = dataset_item_t<S>;                 ///< one sample
  using batch_type = Batch<loader_output_t<T, B, S>>;  ///< one batch
  using device_type = device_t<B>;                     ///< where batches go

  /// Epoch `layout.epoch` of a loader with `plan` over `source`, for `device`. With a
  /// `ChunkedBatcher` and `max_chunks > 0`, the pool may open batches in up to `max_chunks` chunks.
  EpochBatches(std::shared_ptr<const LoaderSource<S, T>> source, device_type device,
               std::uint64_t seed, EpochPlan plan, EpochLayout layout, std::size_t max_chunks = 0)
      : source_(std::move(source)),
        device_(std::move(device)),
        seed_(seed),
        plan_(std::move(plan)),
        layout_(std::move(layout)),
        order_(source_->order(layout_.epoch)),
        first_step_(layout_.offset / (plan_.batch_size() * plan_.share_count(layout_))),
        max_chunks_(max_chunks) {}

  /// Batches in the epoch.
  [[nodiscard]] std::size_t num_batches() const noexcept { return layout_.num_batches; }

  /// The shards the epoch visits from its start (or resume point) on, in order, under a
  /// shard-aware order (none under a plain order); under the shard rank split, this rank's.
  [[nodiscard]] std::vector<std::size_t> shard_visits() const {
    if (layout_.trace.ranks) {  // this rank's shards, as far as the ranks read them
      if (plan_.has_slices()) return layout_.trace.ranks->shards();
      return layout_.trace.ranks->shards(layout_.length * plan_.share_count(layout_));
    }
    return order_.shards_from(layout_.offset);
  }

  /// Makes batch `step` on thread `thread` (named in errors). While it reads and batches,
  /// `stoke::sample_rng()` gives each sample's stream.
  batch_type make(std::size_t step, std::size_t thread) const override {
    if constexpr (is_plan_batcher_v<T, B, S>) {
      return make_planned(step, thread);
    } else {
      BatchItems read = read_batch(step, thread);
      const SampleContext context{seed_, layout_.epoch, read.indices, std::nullopt};
      const SampleContextScope scope(context);
      note_activity(Activity::batch, first_index(read));
      try {
        return batch_type{source_->batcher().batch(std::move(read.items), device_), layout_.epoch,
                          epoch_step(step), read.padding, std::move(read.indices)};
      } catch (...) {
        fail(step, first_index(read), "batch", thread);
      }
    }
  }

  [[nodiscard]] DataErrorContext where(std::size_t step) const override {
    std::size_t first = 0;
    if (step < layout_.num_batches) {
      first = plan_.locate(layout_, step * plan_.batch_size());
      if constexpr (!is_plan_batcher_v<T, B, S>) first = order_(first);
    }
    return DataErrorContext{.epoch = layout_.epoch,
                            .step = epoch_step(step),
                            .index = first,
                            .device = device_name(device_)};
  }

  [[nodiscard]] bool makes_chunks() const noexcept override {
    if constexpr (is_plan_batcher_v<T, B, S>) {
      return false;
    } else {
      return ChunkedBatcher<T, B, item_type> && max_chunks_ > 0;
    }
  }

  /// Reads batch `step` and lets the `ChunkedBatcher` allocate it, on thread `thread`; its row
  /// ranges are then filled on any threads.
  std::shared_ptr<BatchInChunks<batch_type>> open(std::size_t step,
                                                  std::size_t thread) const override {
    if constexpr (is_plan_batcher_v<T, B, S>) {
      return BatchMaker<batch_type>::open(step, thread);
    } else if constexpr (ChunkedBatcher<T, B, item_type>) {
      return open_in_chunks(step, thread);
    } else {
      return BatchMaker<batch_type>::open(step, thread);
    }
  }

 private:
  /// Makes batch `step` of a `PlanBatcher`'s loader: its one position is a batch of the epoch's
  /// plan (the index its `Batch::indices` holds), made by the batcher; one that repeats a batch
  /// to even out a split is padding.
  batch_type make_planned(std::size_t step, std::size_t thread) const {
    const std::size_t planned = plan_.locate(layout_, step);
    const bool padding = step >= layout_.pad_from;
    std::vector<std::size_t> indices{planned};
    const SampleContext context{seed_, layout_.epoch, indices, std::nullopt};
    const SampleContextScope scope(context);
    note_activity(Activity::batch, planned);
    try {
      return batch_type{source_->batcher().batch_planned(source_->dataset(), layout_.epoch, planned,
                                                         padding, device_),
                        layout_.epoch, epoch_step(step), padding ? 1U : 0U, std::move(indices)};
    } catch (...) {
      fail(step, planned, "batch", thread);
    }
  }

  /// Opens batch `step` of samples in chunks (see `open`).
  std::shared_ptr<BatchInChunks<batch_type>> open_in_chunks(std::size_t step,
                                                            std::size_t thread) const {
    BatchItems read = read_batch(step, thread);
    const SampleContext context{seed_, layout_.epoch, read.indices, std::nullopt};
    const SampleContextScope scope(context);
    using Pending = decltype(source_->batcher().begin_batch(std::move(read.items), device_));
    note_activity(Activity::batch, first_index(read));
    try {
      return std::make_shared<BatchChunks<batch_output_t<T, B, item_type>, Pending>>(
          source_->batcher().begin_batch(std::move(read.items), device_), max_chunks_,
          DataErrorContext{.epoch = layout_.epoch,
                           .step = epoch_step(step),
                           .worker = thread_name(thread),
                           .device = device_name(device_),
                           .activity = "batch"},
          seed_, std::move(read.indices), read.padding);
    } catch (...) {
      fail(step, first_index(read), "batch", thread);
    }
  }

  /// The items of one batch read from the dataset, with their dataset indices.
  struct BatchItems {
    std::vector<item_type> items;
    std::vector<std::size_t> indices;
    std::size_t padding = 0;  ///< how many trailing items are padding
  };

  /// Reads the items of batch `step`, with each sample's context installed; a failed read is
  /// rethrown as `DataError`.
  [[nodiscard]] BatchItems read_batch(std::size_t step, std::size_t thread) const {
    const std::size_t b = plan_.batch_size();
    const std::size_t first = step * b;
    const std::size_t count = std::min(b, layout_.length - first);
    BatchItems read;
    read.indices.resize(count);
    plan_.locate(layout_, first, read.indices);
    order_.map(read.indices);
    read.padding = first + count - std::clamp(layout_.pad_from, first, first + count);
    const std::vector<std::size_t>& indices = read.indices;

    SampleContext context{seed_, layout_.epoch, indices, std::nullopt};
    const SampleContextScope scope(context);
    std::vector<item_type>& items = read.items;
    items.reserve(count);
    const S& dataset = source_->dataset();
    if constexpr (requires { dataset.get_many(std::span<const std::size_t>(indices), items); }) {
      note_activity(Activity::get_many, count == 0 ? 0 : indices.front());
      try {
        dataset.get_many(std::span<const std::size_t>(indices), items);
      } catch (...) {
        fail(step, count == 0 ? 0 : indices.front(), "get_many", thread);
      }
    } else {
      for (std::size_t i = 0; i < count; ++i) {
        context.item = i;
        note_activity(Activity::get, indices[i]);
        try {
          items.push_back(dataset.get(indices[i]));
        } catch (...) {
          fail(step, indices[i], "get", thread);
        }
      }
      context.item.reset();
    }
    return read;
  }

  /// The dataset index of the first item of `read` (0 for none).
  [[nodiscard]] static std::size_t first_index(const BatchItems& read) noexcept {
    return read.indices.empty() ? 0 : read.indices.front();
  }

  /// The epoch's step of this loader's batch `step` (see `first_step_`).
  [[nodiscard]] std::size_t epoch_step(std::size_t step) const noexcept {
    return first_step_ + step;
  }

  [[noreturn]] void fail(std::size_t step, std::size_t index, const char* activity,
                         std::size_t thread) const {
    throw DataError(DataErrorContext{.epoch = layout_.epoch,
                                     .step = epoch_step(step),
                                     .index = index,
                                     .worker = thread_name(thread),
                                     .device = device_name(device_),
                                     .activity = activity},
                    current_exception_message());
  }

  std::shared_ptr<const LoaderSource<S, T>> source_;
  device_type device_;
  std::uint64_t seed_;
  EpochPlan plan_;
  EpochLayout layout_;
  AnyEpochOrder order_;
  /// The epoch's step of this loader's first batch: after a restore, the rounds of batches
  /// consumed before it (rounded down when the restore changed the number of shares).
  std::size_t first_step_;
  std::size_t max_chunks_;
};

}  // namespace stoke::detail

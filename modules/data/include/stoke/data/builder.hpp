#pragma once
/// @file
/// `DataLoaderBuilder`: the fluent way to configure and build a loader.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <utility>

#include <stoke/core/error.hpp>
#include <stoke/data/batch_loader.hpp>
#include <stoke/data/multithread_loader.hpp>
#include <stoke/data/options.hpp>

namespace stoke {

/// Configures a loader for backend `B` around a batcher, then builds it over a dataset:
///
///     auto loader = stoke::DataLoaderBuilder<cpu::Backend, MyBatcher>(batcher)
///                       .batch_size(64).shuffle(42).num_workers(2).build(dataset);
template <Backend B, class T>
class DataLoaderBuilder {
 public:
  /// Starts from default options: batch size 1, no shuffle, one worker, queue depth 2.
  explicit DataLoaderBuilder(T batcher) : batcher_(std::move(batcher)) {}

  /// Samples per batch (at least 1).
  DataLoaderBuilder& batch_size(std::size_t size) {
    if (size == 0) throw UsageError("stoke: batch_size must be at least 1");
    options_.batch_size = size;
    return *this;
  }
  /// Visits samples in a new random order every epoch, keyed by `seed`.
  DataLoaderBuilder& shuffle(std::uint64_t seed) {
    options_.shuffle = true;
    options_.seed = seed;
    return *this;
  }
  /// Shuffles the order of the dataset's shards, then the samples within each shard, keyed
  /// by `seed`, so consecutive batches come from one shard (needs `ShardedDataset`).
  DataLoaderBuilder& shuffle_shards(std::uint64_t seed) {
    shuffle(seed);
    options_.shard_aware = true;
    return *this;
  }
  /// Key for per-sample randomness without shuffling the order.
  DataLoaderBuilder& seed(std::uint64_t seed) {
    options_.seed = seed;
    return *this;
  }
  /// Worker threads of the multithread loader (0: batches are made in the caller's thread).
  DataLoaderBuilder& num_workers(std::size_t workers) {
    options_.num_workers = workers;
    return *this;
  }
  /// Host batches made ahead of the consumer (at least 1): the bound on memory in flight.
  /// (Uploading batches to a device ahead of the step is `prefetch_to_device`.)
  DataLoaderBuilder& queue_depth(std::size_t depth) {
    if (depth == 0) throw UsageError("stoke: queue depth must be at least 1");
    options_.queue_depth = depth;
    return *this;
  }
  /// Bounds the consumer's wait for one batch of the worker threads (at least 1 ms): a batch
  /// not ready by then throws a `TimeoutError` naming the worker, its stage (`get`, `batch`) and
  /// the dataset index it is stuck at. A worker still stuck when the loader is dropped is
  /// detached after one more timeout, not joined. Needs `num_workers >= 1`: a loader that makes
  /// batches in the caller's thread cannot time itself out.
  DataLoaderBuilder& batch_timeout(std::chrono::milliseconds timeout) {
    if (timeout.count() <= 0) throw UsageError("stoke: batch_timeout must be at least 1 ms");
    options_.batch_timeout = timeout;
    return *this;
  }
  /// The device batches are made for (default: the backend's default device value).
  DataLoaderBuilder& device(device_t<B> device) {
    device_ = std::move(device);
    return *this;
  }
  /// Drops the samples that do not fill a last batch (or a last round across shares).
  DataLoaderBuilder& drop_last() { return remainder(Remainder::drop); }
  /// Pads the last batch (or round) by wrapping around; padding is reported per batch.
  DataLoaderBuilder& pad() { return remainder(Remainder::pad); }
  /// What happens to the samples left over at the end of an epoch.
  DataLoaderBuilder& remainder(Remainder policy) {
    options_.remainder = policy;
    return *this;
  }

  /// The options so far.
  [[nodiscard]] const LoaderOptions& options() const noexcept { return options_; }

  // Each loader is built by two overloads, one for a `Batcher` of samples and one for a
  // `PlanBatcher`, rather than one constrained by their disjunction (`LoaderBatcher`): a batcher
  // that is neither then gets a diagnostic naming the `Batcher` requirement it misses (g++ stops
  // at "no operand of the disjunction is satisfied").

  /// A multithread loader over `dataset`, batched `batch_size` samples at a time.
  template <Dataset S>
    requires Batcher<T, B, dataset_item_t<S>>
  [[nodiscard]] MultiThreadLoader<S, T, B> build(S dataset) const {
    return MultiThreadLoader<S, T, B>(std::move(dataset), batcher_, options_, device_);
  }
  /// A multithread loader over `dataset` whose batcher plans each epoch's batches.
  template <Dataset S>
    requires is_plan_batcher_v<T, B, S>
  [[nodiscard]] MultiThreadLoader<S, T, B> build(S dataset) const {
    return MultiThreadLoader<S, T, B>(std::move(dataset), batcher_, options_, device_);
  }

  /// A loader over `dataset` that makes batches in the caller's thread.
  template <Dataset S>
    requires Batcher<T, B, dataset_item_t<S>>
  [[nodiscard]] BatchLoader<S, T, B> build_batch_loader(S dataset) const {
    return BatchLoader<S, T, B>(std::move(dataset), batcher_, options_, device_);
  }
  /// A loader over `dataset` that plans each epoch's batches and makes them in the caller's
  /// thread.
  template <Dataset S>
    requires is_plan_batcher_v<T, B, S>
  [[nodiscard]] BatchLoader<S, T, B> build_batch_loader(S dataset) const {
    return BatchLoader<S, T, B>(std::move(dataset), batcher_, options_, device_);
  }

 private:
  T batcher_;
  LoaderOptions options_;
  device_t<B> device_{};
};

}  // namespace stoke

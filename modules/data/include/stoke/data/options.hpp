#pragma once
/// @file
/// `LoaderOptions`: how a loader batches, orders and prefetches (set through the builder).

#include <chrono>
#include <cstddef>
#include <cstdint>

#include <stoke/data/epoch_plan.hpp>

namespace stoke {

/// The settings of a loader; `DataLoaderBuilder` fills them in.
struct LoaderOptions {
  std::size_t batch_size = 1;  ///< samples per batch
  bool shuffle = false;        ///< visit samples in a new random order each epoch
  bool shard_aware = false;    ///< shuffle shard order, then within shards (`ShardedDataset`)
  std::uint64_t seed = 0;      ///< key of the epoch order and per-sample randomness
  Remainder remainder = Remainder::partial;  ///< what happens to the samples left over
  std::size_t num_workers = 1;               ///< worker threads (multithread loader; 0: caller)
  std::size_t queue_depth = 2;  ///< host batches made ahead of the consumer, per loader
  /// How long the consumer waits for one batch of the worker threads before it throws a
  /// `TimeoutError` naming the stuck worker and dataset index (zero: without bound).
  std::chrono::milliseconds batch_timeout{0};
};

}  // namespace stoke

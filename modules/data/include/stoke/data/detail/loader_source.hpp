#pragma once
/// @file
/// `detail::LoaderSource`: what a loader reads and batches with, shared (immutable) by the
/// loader, its copies, slices and shares, and the threads that make its batches.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <ranges>
#include <utility>
#include <vector>

#include <stoke/core/error.hpp>
#include <stoke/data/dataset.hpp>
#include <stoke/data/detail/any_epoch_order.hpp>
#include <stoke/data/options.hpp>
#include <stoke/data/order.hpp>
#include <stoke/data/sharded_order.hpp>

namespace stoke::detail {

/// The dataset, the batcher and the order's settings of a loader.
template <class S, class T>
class LoaderSource {
 public:
  /// The source of a loader over `dataset` with `options`; shard-aware shuffling needs a
  /// `ShardedDataset`.
  LoaderSource(S dataset, T batcher, const LoaderOptions& options)
      : dataset_(std::move(dataset)),
        batcher_(std::move(batcher)),
        seed_(options.seed),
        shuffle_(options.shuffle),
        shards_(shard_table(dataset_, options)) {}

  /// The dataset.
  [[nodiscard]] const S& dataset() const noexcept { return dataset_; }
  /// The batcher.
  [[nodiscard]] const T& batcher() const noexcept { return batcher_; }
  /// Samples in the dataset.
  [[nodiscard]] std::size_t size() const { return static_cast<std::size_t>(dataset_.size()); }

  /// The dataset's shards, when the order is shard-aware (else null).
  [[nodiscard]] const std::shared_ptr<const ShardTable>& shard_table() const noexcept {
    return shards_;
  }

  /// The order of `epoch`: a bijection from positions to dataset indices.
  [[nodiscard]] AnyEpochOrder order(std::size_t epoch) const {
    if (shards_) return AnyEpochOrder(ShardedEpochOrder(shards_, seed_, epoch));
    return AnyEpochOrder(shuffle_ ? EpochOrder(size(), seed_, epoch) : EpochOrder(size()));
  }

 private:
  static std::shared_ptr<const ShardTable> shard_table(const S& dataset,
                                                       const LoaderOptions& options) {
    if (!options.shard_aware) return nullptr;
    if constexpr (ShardedDataset<S>) {
      const auto& begins = dataset.shard_begins();
      return std::make_shared<const ShardTable>(
          std::vector<std::size_t>(std::ranges::begin(begins), std::ranges::end(begins)),
          static_cast<std::size_t>(dataset.size()));
    } else {
      throw UsageError("stoke: shard-aware shuffling needs a dataset with shard_begins()");
    }
  }

  S dataset_;
  T batcher_;
  std::uint64_t seed_;
  bool shuffle_;
  std::shared_ptr<const ShardTable> shards_;  ///< set for shard-aware shuffling
};

}  // namespace stoke::detail

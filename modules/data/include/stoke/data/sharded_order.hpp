#pragma once
/// @file
/// Shard-aware epoch order: shuffle the order of the shards, then the samples within each
/// shard, so consecutive positions stay within one shard (few files open at a time).

#include <algorithm>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <ranges>
#include <span>
#include <string>
#include <vector>

#include <stoke/core/error.hpp>
#include <stoke/core/rng.hpp>
#include <stoke/data/order.hpp>

namespace stoke {

/// A sharded dataset: a dataset stored in shards, which says where each shard begins.
///
/// Requirements:
/// 1. `s.shard_begins()`, on a `const` dataset, is an input range of indices (convertible to
///    `std::size_t`): the first index of every shard;
/// 2. it starts at 0 and does not decrease (`ShardTable` checks both, and refuses the
///    dataset naming what is wrong).
template <class S>
concept ShardedDataset = requires(const S& dataset) {
  { dataset.shard_begins() } -> std::ranges::input_range;
  requires std::convertible_to<std::ranges::range_value_t<decltype(dataset.shard_begins())>,
                               std::size_t>;
};

/// A sharded dataset that reads shards ahead when told the order an epoch visits them (such as
/// `ShardedArrays`, through its `ShardCache`).
///
/// Requirements:
/// 1. `S` is a `ShardedDataset`;
/// 2. `s.read_ahead(shards)`, on a `const` dataset, takes a `std::span<const std::size_t>`
///    of shard numbers in the order the next epoch visits them, and returns at once; a loader
///    with a shard-aware order calls it as each epoch begins.
template <class S>
concept ReadAheadShardedDataset =
    ShardedDataset<S> &&
    requires(const S& dataset, std::span<const std::size_t> shards) { dataset.read_ahead(shards); };

/// Where the shards of a dataset of `size` samples begin, checked.
class ShardTable {
 public:
  /// Validates `begins` (first 0, non-decreasing, each below `size` unless empty shards end it).
  ShardTable(std::vector<std::size_t> begins, std::size_t size)
      : begins_(std::move(begins)), size_(size) {
    if (size_ == 0) {
      begins_.clear();
      return;
    }
    if (begins_.empty() || begins_.front() != 0) {
      throw InputError("stoke: shard_begins() must start with 0 (the first shard's first index)");
    }
    for (std::size_t s = 1; s < begins_.size(); ++s) {
      if (begins_[s] < begins_[s - 1] || begins_[s] > size_) {
        throw InputError("stoke: shard_begins()[" + std::to_string(s) +
                         "] = " + std::to_string(begins_[s]) + " is out of order (previous " +
                         std::to_string(begins_[s - 1]) + ", dataset size " +
                         std::to_string(size_) + ")");
      }
    }
  }

  /// Number of shards.
  [[nodiscard]] std::size_t count() const noexcept { return begins_.size(); }
  /// First index of shard `s`.
  [[nodiscard]] std::size_t begin(std::size_t s) const noexcept { return begins_[s]; }
  /// Samples in shard `s`.
  [[nodiscard]] std::size_t size(std::size_t s) const noexcept {
    return (s + 1 < begins_.size() ? begins_[s + 1] : size_) - begins_[s];
  }

 private:
  std::vector<std::size_t> begins_;
  std::size_t size_;
};

/// The order of one epoch over a sharded dataset: the shards are visited in a keyed random
/// order, and the samples of each shard in a keyed random order. Costs O(shards) memory per
/// epoch and O(log shards) per position.
class ShardedEpochOrder {
 public:
  /// The order of `epoch` under `seed` over the shards of `table`.
  ShardedEpochOrder(std::shared_ptr<const ShardTable> table, std::uint64_t seed,
                    std::uint64_t epoch)
      : table_(std::move(table)),
        seed_(seed),
        epoch_(epoch),
        shard_order_(table_->count(), seed, epoch) {
    slot_begins_.reserve(table_->count());
    std::size_t position = 0;
    for (std::size_t slot = 0; slot < table_->count(); ++slot) {
      slot_begins_.push_back(position);
      position += table_->size(shard_order_(slot));
    }
  }

  /// The dataset index at `position`.
  [[nodiscard]] std::size_t operator()(std::size_t position) const noexcept {
    const auto next = std::upper_bound(slot_begins_.begin(), slot_begins_.end(), position);
    const auto slot = static_cast<std::size_t>(next - slot_begins_.begin()) - 1;
    const std::size_t shard = shard_order_(slot);
    const EpochOrder within(table_->size(shard), mix64(seed_ ^ mix64(shard + 1)), epoch_);
    return table_->begin(shard) + within(position - slot_begins_[slot]);
  }

  /// The shard visited at `slot` (0 = first).
  [[nodiscard]] std::size_t shard_at(std::size_t slot) const noexcept { return shard_order_(slot); }

  /// The shards visited from `position` on, in order (the one holding `position` first).
  [[nodiscard]] std::vector<std::size_t> shards_from(std::size_t position) const {
    std::vector<std::size_t> shards;
    for (std::size_t slot = 0; slot < slot_begins_.size(); ++slot) {
      const std::size_t end = slot_begins_[slot] + table_->size(shard_order_(slot));
      if (end > position) shards.push_back(shard_order_(slot));
    }
    return shards;
  }

 private:
  std::shared_ptr<const ShardTable> table_;
  std::uint64_t seed_;
  std::uint64_t epoch_;
  EpochOrder shard_order_;
  std::vector<std::size_t> slot_begins_;  // first position of each visited shard (skips none)
};

}  // namespace stoke

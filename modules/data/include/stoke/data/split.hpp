#pragma once
/// @file
/// `split`: one loader per device, with equal batch counts, re-drawn every epoch.

#include <concepts>
#include <cstddef>
#include <ranges>
#include <string>
#include <vector>

#include <stoke/core/error.hpp>
#include <stoke/data/dataloader.hpp>
#include <stoke/data/state.hpp>

namespace stoke {

namespace detail {
/// A range of devices of type `D`.
///
/// Requirements:
/// 1. `R` is an input range;
/// 2. its elements convert to `D`.
template <typename R, typename D>
concept DeviceRangeOf =
    std::ranges::input_range<R> && std::convertible_to<std::ranges::range_reference_t<R>, D>;
}  // namespace detail

/// Splits `loader` into one loader per device in `devices`.
///
/// Device `k` of `n` takes every `n`-th batch of the epoch, starting with batch `k`. Every
/// device gets the same number of batches: the remainder is dropped or padded, as the
/// loader's `Remainder` says (`Remainder::partial` is refused, since uneven steps would hang
/// a collective). Across devices the batches are disjoint and cover the epoch; since the
/// split is over positions of the epoch order, each device sees new samples every epoch.
/// Because device `k` takes batch `k` of every round, the first `s` steps of all devices
/// together consumed exactly the first `s * n` batches of the epoch: a prefix, which is what
/// makes resuming onto a different number of devices exact.
template <SplitSource L, detail::DeviceRangeOf<typename L::device_type> Devices>
[[nodiscard]] std::vector<L> split(const L& loader, const Devices& devices) {
  const auto count = static_cast<std::size_t>(std::ranges::distance(devices));
  if (count == 0) throw UsageError("stoke: split needs at least one device");
  std::vector<L> shares;
  shares.reserve(count);
  std::size_t index = 0;
  for (const auto& device : devices) {
    shares.push_back(loader.share(count, index++));
    shares.back().set_device(device);
  }
  return shares;
}

/// How `rank_share` shares an epoch between ranks.
enum class RankSplit {
  /// Every `world_size`-th batch, by the rule of `split`: every rank reads every shard.
  interleaved,
  /// Whole shards per rank, balanced by samples, dealt anew every epoch (`share_by_shards`): each
  /// shard is read by one rank, for data in big files on a shared file system.
  by_shards,
};

/// The share of `loader` for `rank` of `world_size` ranks. `RankSplit::interleaved` (the
/// default) takes every `world_size`-th batch, starting with batch `rank`, by the same rule as
/// `split`, so splitting a rank's share over its local devices equals one split over all
/// devices of all ranks. `RankSplit::by_shards` gives each rank whole shards instead.
template <SplitSource L>
[[nodiscard]] L rank_share(const L& loader, std::size_t rank, std::size_t world_size,
                           RankSplit how = RankSplit::interleaved) {
  if (how == RankSplit::by_shards) {
    if constexpr (requires { loader.share_by_shards(world_size, rank); }) {
      return loader.share_by_shards(world_size, rank);
    } else {
      throw UsageError("stoke: RankSplit::by_shards needs a loader with share_by_shards");
    }
  }
  return loader.share(world_size, rank);
}

/// The state of a split whose shares run in lockstep (every share delivered the same number of
/// batches); refuses shares that are not in lockstep.
template <SplitSource L>
[[nodiscard]] LoaderState split_state(const std::vector<L>& shares) {
  if (shares.empty()) throw UsageError("stoke: split_state needs at least one share");
  const LoaderState state = shares.front().state();
  for (std::size_t k = 1; k < shares.size(); ++k) {
    if (shares[k].state() != state) {
      throw StateError("stoke: split_state: share " + std::to_string(k) +
                       " is not in lockstep with share 0");
    }
  }
  return state;
}

}  // namespace stoke

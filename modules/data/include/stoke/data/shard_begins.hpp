#pragma once
/// @file
/// `locate_in_shards`: which shard of several laid end to end holds an item, found from where
/// each shard's items begin (the one lookup every sharded source makes).

#include <algorithm>
#include <cstddef>
#include <utility>
#include <vector>

namespace stoke {

/// The shard of item `index` and the item within it, for shards whose items begin at `begins`
/// (ascending, the first 0, `index` at least 0 and below the total): `{k, index - begins[k]}`
/// for the last `k` with `begins[k] <= index`, so that empty shards are passed over.
[[nodiscard]] inline std::pair<std::size_t, std::size_t> locate_in_shards(
    const std::vector<std::size_t>& begins, std::size_t index) noexcept {
  const auto next = std::upper_bound(begins.begin(), begins.end(), index);
  const auto k = static_cast<std::size_t>(next - begins.begin()) - 1;
  return {k, index - begins[k]};
}

}  // namespace stoke

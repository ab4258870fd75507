#pragma once
/// @file
/// `detail::AnyEpochOrder`: the order of one epoch, plain (identity or Feistel) or
/// shard-aware, behind one type.

#include <cstddef>
#include <span>
#include <utility>
#include <variant>
#include <vector>

#include <stoke/data/order.hpp>
#include <stoke/data/sharded_order.hpp>

namespace stoke::detail {

/// The order of one epoch: plain (identity or Feistel) or shard-aware.
class AnyEpochOrder {
 public:
  /// A plain order.
  explicit AnyEpochOrder(EpochOrder order) : order_(std::move(order)) {}
  /// A shard-aware order.
  explicit AnyEpochOrder(ShardedEpochOrder order) : order_(std::move(order)) {}
  /// The dataset index at `position`.
  [[nodiscard]] std::size_t operator()(std::size_t position) const {
    return std::visit([position](const auto& order) { return order(position); }, order_);
  }
  /// The shards a shard-aware order visits from `position` on, in order (none for a plain
  /// order, whose positions jump between shards).
  [[nodiscard]] std::vector<std::size_t> shards_from(std::size_t position) const {
    if (const auto* sharded = std::get_if<ShardedEpochOrder>(&order_)) {
      return sharded->shards_from(position);
    }
    return {};
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

}  // namespace stoke::detail

// Shard-aware order: shuffled shard order, shuffled within shards; same guarantees.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <vector>

#include <stoke/stoke.hpp>

#include "stoke_test_support.hpp"

namespace {

using stoke::cpu::Backend;
using stoke::testing::ItemsBatcher;

/// Samples 0..n-1 stored in shards that begin at `begins`.
struct ShardedIota {
  std::size_t count = 0;
  std::vector<std::size_t> begins;
  [[nodiscard]] std::size_t size() const { return count; }
  [[nodiscard]] std::size_t get(std::size_t index) const { return index; }
  [[nodiscard]] const std::vector<std::size_t>& shard_begins() const { return begins; }
};

std::size_t shard_of(const ShardedIota& data, std::size_t index) {
  return static_cast<std::size_t>(std::upper_bound(data.begins.begin(), data.begins.end(), index) -
                                  data.begins.begin()) -
         1;
}

TEST(ShardedOrder, VisitsShardsOneAfterAnotherInARandomOrder) {
  const ShardedIota data{100, {0, 10, 35, 35, 60, 90}};  // one shard is empty
  auto loader =
      stoke::DataLoaderBuilder<Backend, ItemsBatcher>({}).batch_size(7).shuffle_shards(3).build(
          data);
  std::set<std::vector<std::size_t>> shard_orders;
  for (int epoch = 0; epoch < 4; ++epoch) {
    const auto items = stoke::testing::epoch_items(loader);
    auto sorted = items;
    std::sort(sorted.begin(), sorted.end());
    ASSERT_EQ(sorted.size(), 100u);
    for (std::size_t i = 0; i < 100; ++i) ASSERT_EQ(sorted[i], i);
    std::vector<std::size_t> visited;  // shards in the order first seen
    for (const auto index : items) {
      const auto shard = shard_of(data, index);
      if (visited.empty() || visited.back() != shard) visited.push_back(shard);
    }
    EXPECT_EQ(visited.size(), 5u) << "a shard was visited in two pieces";
    shard_orders.insert(visited);
    EXPECT_NE(items, std::vector<std::size_t>(sorted)) << "not shuffled within shards";
  }
  EXPECT_GT(shard_orders.size(), 1u);
}

TEST(ShardedOrder, SplitAcrossDevicesKeepsExactlyOnce) {
  const ShardedIota data{1000, {0, 100, 250, 600, 700}};
  auto loader = stoke::DataLoaderBuilder<Backend, ItemsBatcher>({})
                    .batch_size(8)
                    .pad()
                    .shuffle_shards(5)
                    .num_workers(2)
                    .build(data);
  std::vector<std::size_t> seen;
  for (auto& part : stoke::split(loader, Backend::devices(3))) {
    for (auto& batch : part.iter()) {
      seen.insert(seen.end(), batch.indices.begin(), batch.indices.begin() + batch.real_size());
    }
  }
  std::sort(seen.begin(), seen.end());
  ASSERT_EQ(seen.size(), 1000u);
  for (std::size_t i = 0; i < 1000; ++i) ASSERT_EQ(seen[i], i);
}

using Builder = stoke::DataLoaderBuilder<Backend, ItemsBatcher>;

TEST(ShardedOrder, NeedsADatasetThatNamesItsShards) {
  auto builder = Builder({}).shuffle_shards(1);
  EXPECT_THROW((void)builder.build(stoke::testing::IotaDataset{10}), stoke::UsageError);
}

TEST(ShardedOrder, RefusesShardBeginsOutOfOrder) {
  auto builder = Builder({}).shuffle_shards(1);
  EXPECT_THAT(
      [&] { (void)builder.build(ShardedIota{10, {0, 6, 4}}); },
      ::testing::ThrowsMessage<stoke::InputError>(::testing::HasSubstr("shard_begins()[2] = 4")));
}

}  // namespace

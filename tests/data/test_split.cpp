// split(loader, devices): equal batch counts, disjoint, covering, re-drawn every epoch.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>
#include <thread>
#include <vector>

#include <stoke/stoke.hpp>

#include "stoke_test_support.hpp"

namespace {

using stoke::cpu::Backend;
using stoke::testing::epoch_items;
using stoke::testing::IotaDataset;

using stoke::testing::items_builder;

TEST(Split, GivesEachDeviceItsOwnLoaderForThatDevice) {
  auto loader = items_builder().batch_size(4).pad().build(IotaDataset{100});
  auto parts = stoke::split(loader, Backend::devices(3));
  ASSERT_EQ(parts.size(), 3u);
  for (std::size_t d = 0; d < 3; ++d) {
    EXPECT_EQ(parts[d].device(), (stoke::cpu::Device{d}));
    for (auto& batch : parts[d].iter()) ASSERT_EQ(batch.data.device, (stoke::cpu::Device{d}));
  }
}

TEST(Split, PadGivesEqualBatchCountsAndCoversEverySampleOnce) {
  auto loader = items_builder().batch_size(4).pad().shuffle(3).build(IotaDataset{101});
  auto parts = stoke::split(loader, Backend::devices(3));
  std::map<std::size_t, int> seen;
  std::size_t padding = 0;
  for (auto& part : parts) {
    EXPECT_EQ(part.num_batches(), 9u);  // ceil(101 / 12) rounds
    for (auto& batch : part.iter()) {
      for (std::size_t i = 0; i < batch.real_size(); ++i) ++seen[batch.indices[i]];
      padding += batch.padding;
    }
  }
  EXPECT_EQ(seen.size(), 101u);
  for (const auto& [index, times] : seen) EXPECT_EQ(times, 1) << "index " << index;
  EXPECT_EQ(padding, 9u * 12u - 101u);
}

TEST(Split, DropGivesEqualBatchCountsAndReportsWhatItDropped) {
  auto loader = items_builder().batch_size(4).drop_last().shuffle(3).build(IotaDataset{101});
  auto parts = stoke::split(loader, Backend::devices(3));
  std::set<std::size_t> seen;
  for (auto& part : parts) {
    EXPECT_EQ(part.num_batches(), 8u);
    EXPECT_EQ(part.layout(0).dropped, 5u);
    for (const auto item : epoch_items(part)) EXPECT_TRUE(seen.insert(item).second) << item;
  }
  EXPECT_EQ(seen.size(), 96u);
}

TEST(Split, PartsAreRedrawnEveryEpoch) {
  auto loader =
      items_builder().batch_size(5).pad().shuffle(8).num_workers(2).build(IotaDataset{60});
  auto parts = stoke::split(loader, Backend::devices(2));
  auto first_epoch = epoch_items(parts[0]);
  auto second_epoch = epoch_items(parts[0]);
  std::sort(first_epoch.begin(), first_epoch.end());
  std::sort(second_epoch.begin(), second_epoch.end());
  EXPECT_NE(first_epoch, second_epoch);
}

TEST(Split, DevicesCanLoadConcurrentlyEachWithItsWorkers) {
  auto loader =
      items_builder().batch_size(3).pad().shuffle(2).num_workers(2).build(IotaDataset{500});
  auto parts = stoke::split(loader, Backend::devices(4));
  std::vector<std::vector<std::size_t>> results(parts.size());
  std::vector<std::thread> threads;
  for (std::size_t d = 0; d < parts.size(); ++d) {
    threads.emplace_back([&, d] { results[d] = epoch_items(parts[d]); });
  }
  for (auto& thread : threads) thread.join();
  std::set<std::size_t> all;
  for (const auto& items : results) all.insert(items.begin(), items.end());
  EXPECT_EQ(all.size(), 500u);
}

TEST(Split, FewerSamplesThanDevicesStillGivesEveryDeviceABatch) {
  auto loader = items_builder().batch_size(2).pad().build(IotaDataset{3});
  auto parts = stoke::split(loader, Backend::devices(4));
  std::size_t real = 0;
  for (auto& part : parts) {
    ASSERT_EQ(part.num_batches(), 1u);
    for (auto& batch : part.iter()) real += batch.real_size();
  }
  EXPECT_EQ(real, 3u);
}

TEST(Split, RefusesAPartialRemainderAndAnEmptyDeviceList) {
  auto loader = items_builder().batch_size(2).build(IotaDataset{10});
  EXPECT_THROW((void)stoke::split(loader, Backend::devices(2)), stoke::UsageError);
  auto padded = items_builder().batch_size(2).pad().build(IotaDataset{10});
  EXPECT_THROW((void)stoke::split(padded, std::vector<stoke::cpu::Device>{}), stoke::UsageError);
}

TEST(Split, SplittingASplitEqualsOneSplitOverAllDevices) {
  // Ranks first, then devices per rank: the same rule at both levels.
  auto loader = items_builder().batch_size(3).pad().shuffle(4).build(IotaDataset{77});
  auto ranks = stoke::split(loader, Backend::devices(2));
  auto flat = stoke::split(loader, Backend::devices(6));
  for (std::size_t r = 0; r < 2; ++r) {
    auto devices = stoke::split(ranks[r], Backend::devices(3));
    for (std::size_t d = 0; d < 3; ++d) {
      EXPECT_EQ(epoch_items(devices[d]), epoch_items(flat[r + 2 * d])) << r << "," << d;
    }
  }
}

}  // namespace

// The edge cases named in the semantics issue, each on its own.
#include <gtest/gtest.h>

#include <vector>

#include <stoke/stoke.hpp>

#include "stoke_test_support.hpp"

namespace {

using stoke::cpu::Backend;
using stoke::testing::epoch_items;
using stoke::testing::IotaDataset;
using stoke::testing::ItemsBatcher;

auto shuffled_builder() {
  return stoke::DataLoaderBuilder<Backend, ItemsBatcher>({}).shuffle(1);
}

TEST(EdgeCases, EmptyDatasetSplitsIntoDevicesWithNoBatches) {
  for (auto remainder : {stoke::Remainder::drop, stoke::Remainder::pad}) {
    auto loader =
        shuffled_builder().batch_size(4).remainder(remainder).num_workers(2).build(IotaDataset{0});
    for (auto& part : stoke::split(loader, Backend::devices(3))) {
      EXPECT_EQ(part.num_batches(), 0u);
      EXPECT_TRUE(epoch_items(part).empty());
      EXPECT_EQ(part.state().consumed, 0u);
    }
  }
}

TEST(EdgeCases, FewerSamplesThanDevicesWithDropGivesNoBatchesAndReportsTheDrop) {
  auto loader = shuffled_builder().batch_size(1).drop_last().build(IotaDataset{3});
  for (auto& part : stoke::split(loader, Backend::devices(4))) {
    EXPECT_EQ(part.num_batches(), 0u);
    EXPECT_EQ(part.layout(0).dropped, 3u);
  }
}

TEST(EdgeCases, FewerSamplesThanDevicesWithPadGivesEveryDeviceOneBatch) {
  auto loader = shuffled_builder().batch_size(1).pad().build(IotaDataset{3});
  std::size_t real = 0, padding = 0;
  for (auto& part : stoke::split(loader, Backend::devices(4))) {
    for (auto& batch : part.iter()) {
      real += batch.real_size();
      padding += batch.padding;
    }
  }
  EXPECT_EQ(real, 3u);
  EXPECT_EQ(padding, 1u);
}

TEST(EdgeCases, BatchLargerThanTheDatasetOnSeveralDevices) {
  auto loader = shuffled_builder().batch_size(50).pad().build(IotaDataset{30});
  auto parts = stoke::split(loader, Backend::devices(2));
  std::size_t real = 0;
  for (auto& part : parts) {
    ASSERT_EQ(part.num_batches(), 1u);
    for (auto& batch : part.iter()) {
      EXPECT_EQ(batch.size(), 50u);
      real += batch.real_size();
    }
  }
  EXPECT_EQ(real, 30u);
}

TEST(EdgeCases, OneSample) {
  auto loader = shuffled_builder().batch_size(8).build(IotaDataset{1});
  EXPECT_EQ(epoch_items(loader), std::vector<std::size_t>{0});
  auto padded = shuffled_builder().batch_size(2).pad().build(IotaDataset{1});
  auto parts = stoke::split(padded, Backend::devices(2));
  EXPECT_EQ(epoch_items(parts[0]), (std::vector<std::size_t>{0, 0}));
  EXPECT_EQ(epoch_items(parts[1]), (std::vector<std::size_t>{0, 0}));
}

}  // namespace

// BatchLoader: batches made in the caller's thread; order, remainder, errors, slices.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <set>
#include <vector>

#include <stoke/stoke.hpp>

#include "stoke_test_support.hpp"

namespace {

using stoke::cpu::Backend;
using stoke::testing::epoch_items;
using stoke::testing::FailingDataset;
using stoke::testing::IotaDataset;
using stoke::testing::ItemsBatcher;

using stoke::testing::items_builder;

std::vector<std::size_t> sorted(std::vector<std::size_t> values) {
  std::sort(values.begin(), values.end());
  return values;
}

std::vector<std::size_t> iota(std::size_t n) {
  std::vector<std::size_t> out(n);
  std::iota(out.begin(), out.end(), 0);
  return out;
}

TEST(BatchLoader, YieldsEverySampleInOrderWithoutShuffle) {
  auto loader = items_builder().batch_size(3).build_batch_loader(IotaDataset{10});
  std::vector<std::size_t> sizes;
  for (auto& batch : loader.iter()) sizes.push_back(batch.size());
  EXPECT_EQ(sizes, (std::vector<std::size_t>{3, 3, 3, 1}));
  EXPECT_EQ(epoch_items(loader), iota(10));
}

TEST(BatchLoader, BatchCarriesEpochStepAndIndices) {
  auto loader = items_builder().batch_size(4).shuffle(5).build_batch_loader(IotaDataset{10});
  std::size_t step = 0;
  for (auto& batch : loader.iter()) {
    EXPECT_EQ(batch.epoch, 0u);
    EXPECT_EQ(batch.step, step++);
    EXPECT_EQ(batch.indices, batch.data.items);  // sample i is the number i
  }
  EXPECT_EQ(step, 3u);
}

TEST(BatchLoader, ShuffleVisitsEverySampleOnceInANewOrderEachEpoch) {
  auto loader = items_builder().batch_size(8).shuffle(11).build_batch_loader(IotaDataset{200});
  std::set<std::vector<std::size_t>> orders;
  for (int epoch = 0; epoch < 5; ++epoch) {
    const auto items = epoch_items(loader);
    EXPECT_EQ(sorted(items), iota(200));
    orders.insert(items);
  }
  EXPECT_EQ(orders.size(), 5u);
  EXPECT_EQ(loader.epoch(), 5u);
}

TEST(BatchLoader, SameSeedGivesSameOrder) {
  auto a = items_builder().batch_size(8).shuffle(11).build_batch_loader(IotaDataset{100});
  auto b = items_builder().batch_size(8).shuffle(11).build_batch_loader(IotaDataset{100});
  EXPECT_EQ(epoch_items(a), epoch_items(b));
  EXPECT_EQ(epoch_items(a), epoch_items(b));
}

TEST(BatchLoader, SetEpochReplaysThatEpoch) {
  auto loader = items_builder().batch_size(8).shuffle(3).build_batch_loader(IotaDataset{50});
  epoch_items(loader);
  const auto second = epoch_items(loader);
  loader.set_epoch(1);
  EXPECT_EQ(epoch_items(loader), second);
}

TEST(BatchLoader, DropLastDropsTheIncompleteBatch) {
  auto loader = items_builder().batch_size(4).drop_last().build_batch_loader(IotaDataset{10});
  EXPECT_EQ(loader.num_batches(), 2u);
  EXPECT_EQ(loader.num_items(), 8u);
  EXPECT_EQ(loader.layout(0).dropped, 2u);
  EXPECT_EQ(loader.num_dropped(), 2u);
  EXPECT_EQ(loader.num_padded(), 0u);
  EXPECT_EQ(epoch_items(loader), iota(8));
}

TEST(BatchLoader, ReportsThePaddingAndTheDroppedSamplesOfTheNextEpoch) {
  const auto padded = items_builder()
                          .batch_size(4)
                          .remainder(stoke::Remainder::pad)
                          .build_batch_loader(IotaDataset{10});
  EXPECT_EQ(padded.num_items(), 12u);
  EXPECT_EQ(padded.num_padded(), 2u);
  EXPECT_EQ(padded.num_dropped(), 0u);
  // Split in three, 10 samples in batches of 4 fill no round of 12: each part drops them all.
  const auto part =
      items_builder().batch_size(4).drop_last().build_batch_loader(IotaDataset{10}).share(3, 1);
  EXPECT_EQ(part.num_batches(), 0u);
  EXPECT_EQ(part.num_dropped(), 10u);
}

TEST(BatchLoader, PadFillsTheLastBatchAndMarksThePadding) {
  auto loader = items_builder().batch_size(4).pad().build_batch_loader(IotaDataset{10});
  std::vector<std::size_t> padding;
  for (auto& batch : loader.iter()) padding.push_back(batch.padding);
  EXPECT_EQ(padding, (std::vector<std::size_t>{0, 0, 2}));
  EXPECT_EQ(epoch_items(loader), (std::vector<std::size_t>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 0, 1}));
}

TEST(BatchLoader, BatchesAreMadeForTheDeviceSet) {
  auto loader = items_builder().batch_size(4).device({2}).build_batch_loader(IotaDataset{8});
  for (auto& batch : loader.iter()) EXPECT_EQ(batch.data.device, (stoke::cpu::Device{2}));
  loader.set_device({5});
  for (auto& batch : loader.iter()) EXPECT_EQ(batch.data.device, (stoke::cpu::Device{5}));
}

TEST(BatchLoader, SlicesArePositionsOfTheEpochOrderAndRedrawnEachEpoch) {
  auto loader = items_builder().batch_size(5).shuffle(9).build_batch_loader(IotaDataset{100});
  auto first = loader.slice(0, 50);
  auto second = loader.slice(50, 100);
  EXPECT_EQ(first.num_items(), 50u);
  std::vector<std::vector<std::size_t>> first_epochs;
  for (int epoch = 0; epoch < 3; ++epoch) {
    auto a = epoch_items(first);
    const auto b = epoch_items(second);
    first_epochs.push_back(sorted(a));
    a.insert(a.end(), b.begin(), b.end());
    EXPECT_EQ(sorted(a), iota(100)) << "epoch " << epoch;  // disjoint and covering
  }
  EXPECT_NE(first_epochs[0], first_epochs[1]);  // a slice sees other samples each epoch
}

TEST(BatchLoader, SliceEndIsClampedToTheEpoch) {
  auto loader = items_builder().batch_size(4).build_batch_loader(IotaDataset{10});
  EXPECT_EQ(loader.slice(8, 1000).num_items(), 2u);
  EXPECT_EQ(loader.slice(20, 30).num_items(), 0u);
}

TEST(BatchLoader, ErrorInGetNamesIndexWorkerAndDevice) {
  auto loader = stoke::DataLoaderBuilder<Backend, ItemsBatcher>(ItemsBatcher{})
                    .batch_size(4)
                    .device({1})
                    .build_batch_loader(FailingDataset{10, 6});
  try {
    epoch_items(loader);
    FAIL() << "expected a DataError";
  } catch (const stoke::DataError& error) {
    EXPECT_EQ(error.context().index, 6u);
    EXPECT_EQ(error.context().step, 1u);
    EXPECT_EQ(error.context().worker, "caller");
    EXPECT_EQ(error.context().device, "cpu:1");
    EXPECT_THAT(error.what(), ::testing::HasSubstr("dataset index 6"));
    EXPECT_THAT(error.what(), ::testing::HasSubstr("cannot read sample 6"));
  }
}

struct FailingBatcher {
  template <class Device>
  int batch(std::vector<std::size_t> items, const Device&) const {
    if (items.front() == 4) throw std::runtime_error("batcher refused");
    return 0;
  }
};

TEST(BatchLoader, ErrorInBatcherIsReportedWithTheBatchsFirstIndex) {
  auto loader = stoke::DataLoaderBuilder<Backend, FailingBatcher>(FailingBatcher{})
                    .batch_size(4)
                    .build_batch_loader(IotaDataset{10});
  try {
    for (auto& batch : loader.iter()) (void)batch;
    FAIL() << "expected a DataError";
  } catch (const stoke::DataError& error) {
    EXPECT_EQ(error.context().activity, "batch");
    EXPECT_EQ(error.context().index, 4u);
    EXPECT_THAT(error.what(), ::testing::HasSubstr("batcher refused"));
  }
}

TEST(BatchLoader, EmptyDatasetYieldsNoBatches) {
  auto loader = items_builder().batch_size(4).shuffle(1).build_batch_loader(IotaDataset{0});
  EXPECT_TRUE(epoch_items(loader).empty());
  EXPECT_EQ(loader.num_batches(), 0u);
}

TEST(BatchLoader, BatchLargerThanDatasetGivesOneBatch) {
  auto loader = items_builder().batch_size(64).build_batch_loader(IotaDataset{5});
  EXPECT_EQ(loader.num_batches(), 1u);
  EXPECT_EQ(epoch_items(loader), iota(5));
}

TEST(Builder, RejectsZeroBatchSizeAndZeroPrefetch) {
  EXPECT_THROW(items_builder().batch_size(0), stoke::UsageError);
  EXPECT_THROW(items_builder().queue_depth(0), stoke::UsageError);
}

}  // namespace

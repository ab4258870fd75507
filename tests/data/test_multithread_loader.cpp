// MultiThreadLoader: lazy, persistent, ordered, bounded, errors reach the consumer, clean drop.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <memory>
#include <thread>
#include <vector>

#include <stoke/stoke.hpp>

#include "stoke_test_support.hpp"

namespace {

using stoke::cpu::Backend;
using stoke::testing::baseline_thread_count;
using stoke::testing::epoch_items;
using stoke::testing::FailingDataset;
using stoke::testing::IotaDataset;
using stoke::testing::ItemsBatcher;
using stoke::testing::thread_count;

auto builder() {
  return stoke::DataLoaderBuilder<Backend, ItemsBatcher>(ItemsBatcher{});
}

/// A dataset whose reads take a little time, so workers really overlap.
struct SlowDataset {
  std::size_t count = 0;
  std::chrono::microseconds delay{200};
  [[nodiscard]] std::size_t size() const { return count; }
  [[nodiscard]] std::size_t get(std::size_t index) const {
    std::this_thread::sleep_for(delay);
    return index;
  }
};

TEST(MultiThreadLoader, StartsNoThreadBeforeTheFirstIter) {
  const std::size_t before = baseline_thread_count();
  auto loader = builder().batch_size(4).num_workers(3).build(IotaDataset{40});
  EXPECT_FALSE(loader.workers_started());
  EXPECT_EQ(loader.num_batches(), 10u);  // asking questions starts nothing either
  EXPECT_EQ(thread_count(), before);
  {
    auto range = loader.iter();
    EXPECT_TRUE(loader.workers_started());
    EXPECT_EQ(thread_count(), before + 3);
  }
}

TEST(MultiThreadLoader, KeepsItsWorkersAcrossEpochs) {
  const std::size_t before = baseline_thread_count();
  auto loader = builder().batch_size(4).num_workers(2).shuffle(1).build(IotaDataset{40});
  for (int epoch = 0; epoch < 4; ++epoch) {
    EXPECT_EQ(epoch_items(loader).size(), 40u);
    EXPECT_EQ(thread_count(), before + 2) << "epoch " << epoch;
  }
}

TEST(MultiThreadLoader, JoinsItsWorkersWhenDropped) {
  const std::size_t before = baseline_thread_count();
  {
    auto loader = builder().batch_size(4).num_workers(3).build(IotaDataset{40});
    epoch_items(loader);
  }
  EXPECT_EQ(thread_count(), before);
}

TEST(MultiThreadLoader, GivesTheSameBatchesAsTheCallerThreadLoaderForAnyWorkerCount) {
  auto reference = builder().batch_size(7).shuffle(21).build_batch_loader(SlowDataset{150});
  std::vector<std::vector<std::size_t>> expected;
  for (int epoch = 0; epoch < 3; ++epoch) expected.push_back(epoch_items(reference));
  for (std::size_t workers : {0u, 1u, 2u, 3u, 8u}) {
    auto loader = builder().batch_size(7).shuffle(21).num_workers(workers).queue_depth(3).build(
        SlowDataset{150});
    for (int epoch = 0; epoch < 3; ++epoch) {
      ASSERT_EQ(epoch_items(loader), expected[epoch]) << workers << " workers, epoch " << epoch;
    }
  }
}

TEST(MultiThreadLoader, DeliversStepsInOrder) {
  auto loader = builder().batch_size(3).num_workers(4).build(SlowDataset{90});
  std::size_t expected = 0;
  for (auto& batch : loader.iter()) EXPECT_EQ(batch.step, expected++);
  EXPECT_EQ(expected, 30u);
}

/// Counts batches made, to check how far workers run ahead of the consumer.
struct CountingBatcher {
  std::shared_ptr<std::atomic<std::size_t>> made = std::make_shared<std::atomic<std::size_t>>(0);
  template <class Device>
  std::size_t batch(std::vector<std::size_t> items, const Device&) const {
    made->fetch_add(1);
    return items.size();
  }
};

TEST(MultiThreadLoader, NeverRunsMoreThanPrefetchBatchesAhead) {
  CountingBatcher batcher;
  auto loader = stoke::DataLoaderBuilder<Backend, CountingBatcher>(batcher)
                    .batch_size(2)
                    .num_workers(4)
                    .queue_depth(3)
                    .build(IotaDataset{200});
  std::size_t taken = 0;
  for (auto& batch : loader.iter()) {
    ++taken;
    (void)batch;
    std::this_thread::sleep_for(std::chrono::microseconds(300));  // a slow consumer
    ASSERT_LE(batcher.made->load(), taken + 3) << "after " << taken << " batches";
  }
  EXPECT_EQ(taken, 100u);
}

TEST(MultiThreadLoader, RethrowsAWorkerErrorWithIndexWorkerAndDevice) {
  auto loader = builder().batch_size(4).num_workers(2).device({1}).build(FailingDataset{40, 17});
  std::size_t delivered = 0;
  try {
    for (auto& batch : loader.iter()) delivered += batch.size();
    FAIL() << "expected a DataError";
  } catch (const stoke::DataError& error) {
    EXPECT_EQ(error.context().index, 17u);
    EXPECT_EQ(error.context().step, 4u);
    EXPECT_THAT(error.context().worker, ::testing::StartsWith("worker "));
    EXPECT_EQ(error.context().device, "cpu:1");
    EXPECT_THAT(error.what(), ::testing::HasSubstr("cannot read sample 17"));
  }
  EXPECT_EQ(delivered, 16u);  // the four batches before the failing one arrived, in order
}

TEST(MultiThreadLoader, CanRunAnotherEpochAfterAnError) {
  auto loader = builder().batch_size(4).num_workers(2).build(FailingDataset{40, 17});
  EXPECT_THROW(epoch_items(loader), stoke::DataError);
  EXPECT_THROW(epoch_items(loader), stoke::DataError);  // the workers still serve epochs
}

TEST(MultiThreadLoader, DroppingARangeMidEpochThenTheLoaderDoesNotHang) {
  const std::size_t before = baseline_thread_count();
  {
    auto loader = builder().batch_size(2).num_workers(3).queue_depth(4).build(SlowDataset{400});
    for (auto& batch : loader.iter()) {
      if (batch.step == 2) break;
    }
    // The next epoch starts from a clean window.
    EXPECT_EQ(epoch_items(loader).size(), 400u);
    for (auto& batch : loader.iter()) {
      if (batch.step == 1) break;
    }
  }
  EXPECT_EQ(thread_count(), before);
}

TEST(MultiThreadLoader, RangeCanOutliveItsLoader) {
  auto range = std::make_unique<
      stoke::BatchRange<stoke::MultiThreadLoader<IotaDataset, ItemsBatcher, Backend>::batch_type>>(
      [] {
        auto loader = builder().batch_size(5).num_workers(2).build(IotaDataset{50});
        return loader.iter();
      }());
  std::size_t items = 0;
  for (auto& batch : *range) items += batch.size();
  EXPECT_EQ(items, 50u);
}

TEST(MultiThreadLoader, ANewIterSupersedesAnOpenRange) {
  auto loader = builder().batch_size(2).num_workers(2).build(IotaDataset{20});
  auto first = loader.iter();
  auto it = first.begin();
  auto second = loader.iter();
  EXPECT_THROW(++it, stoke::StateError);
  std::size_t items = 0;
  for (auto& batch : second) items += batch.size();
  EXPECT_EQ(items, 20u);
}

TEST(MultiThreadLoader, CopiesStartTheirOwnWorkers) {
  auto loader = builder().batch_size(4).num_workers(2).build(IotaDataset{40});
  epoch_items(loader);
  auto copy = loader;
  EXPECT_TRUE(loader.workers_started());
  EXPECT_FALSE(copy.workers_started());
  EXPECT_EQ(epoch_items(copy).size(), 40u);
}

}  // namespace

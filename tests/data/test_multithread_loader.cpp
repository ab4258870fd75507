// MultiThreadLoader: lazy, persistent, ordered, bounded, errors reach the consumer, clean drop.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <memory>
#include <mutex>
#include <set>
#include <stdexcept>
#include <thread>
#include <utility>
#include <vector>

#include <stoke/stoke.hpp>

#include "stoke_test_support.hpp"
#include "test_sync.hpp"

namespace {

using stoke::testing::GatedDataset;

using stoke::cpu::Backend;
using stoke::testing::baseline_thread_count;
using stoke::testing::epoch_items;
using stoke::testing::FailingDataset;
using stoke::testing::IotaDataset;
using stoke::testing::ItemsBatcher;
using stoke::testing::thread_count;

using stoke::testing::items_builder;

using stoke::testing::patience;

/// The batches a `PairingBatcher` is to make, and those it made (its copies share them).
struct PairedSteps {
  std::mutex mutex;
  std::condition_variable made_one;
  /// The items of the batch of each step of each epoch (none: no pairs).
  std::vector<std::vector<std::vector<std::size_t>>> epochs;
  std::size_t calls = 0;
  std::set<std::pair<std::size_t, std::size_t>> made;  ///< (epoch, step)
};

/// `ItemsBatcher`, except that the workers really overlap and finish batches out of step order:
/// given the batches of each epoch (`steps->epochs`), the batch of an even step returns only
/// after that of the next step, which another worker makes meanwhile. Workers claim steps in
/// order, up to the queue depth ahead of the step the consumer waits for, so two workers and a
/// queue depth of two are enough.
struct PairingBatcher {
  std::shared_ptr<PairedSteps> steps = std::make_shared<PairedSteps>();

  template <class Device>
  stoke::testing::ItemsBatch<Device> batch(std::vector<std::size_t> items,
                                           const Device& device) const {
    std::unique_lock lock(steps->mutex);
    if (steps->epochs.empty()) return {std::move(items), device};
    const std::size_t epoch = steps->calls++ / steps->epochs.front().size();
    if (epoch >= steps->epochs.size()) throw std::runtime_error("an epoch too many");
    const auto& batches = steps->epochs[epoch];
    const std::size_t step = static_cast<std::size_t>(
        std::find(batches.begin(), batches.end(), items) - batches.begin());
    if (step == batches.size()) throw std::runtime_error("a batch of no step");
    if (step % 2 == 0 && step + 1 < batches.size()) {
      const bool paired = steps->made_one.wait_for(
          lock, patience, [&] { return steps->made.contains({epoch, step + 1}); });
      if (!paired) throw std::runtime_error("the batch of the next step was never made");
    }
    steps->made.emplace(epoch, step);
    lock.unlock();
    steps->made_one.notify_all();
    return {std::move(items), device};
  }
};

/// A loader of `IotaDataset{count}` set up by `configure` with `workers` threads, which finish
/// its batches out of step order in its first `epochs` epochs when there are two or more
/// (`PairingBatcher`).
template <class Configure>
auto pairing_loader(Configure configure, std::size_t workers, std::size_t count,
                    std::size_t epochs) {
  PairingBatcher batcher;
  if (workers >= 2) {
    auto reference = configure(items_builder()).build_batch_loader(IotaDataset{count});
    for (std::size_t epoch = 0; epoch < epochs; ++epoch) {
      auto& batches = batcher.steps->epochs.emplace_back();
      for (auto& batch : reference.iter()) batches.push_back(batch.data.items);
    }
  }
  return configure(stoke::DataLoaderBuilder<Backend, PairingBatcher>(batcher))
      .num_workers(workers)
      .build(IotaDataset{count});
}

TEST(MultiThreadLoader, StartsNoThreadBeforeTheFirstIter) {
  const std::size_t before = baseline_thread_count();
  auto loader = items_builder().batch_size(4).num_workers(3).build(IotaDataset{40});
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
  auto loader = items_builder().batch_size(4).num_workers(2).shuffle(1).build(IotaDataset{40});
  for (int epoch = 0; epoch < 4; ++epoch) {
    EXPECT_EQ(epoch_items(loader).size(), 40u);
    EXPECT_EQ(thread_count(), before + 2) << "epoch " << epoch;
  }
}

TEST(MultiThreadLoader, JoinsItsWorkersWhenDropped) {
  const std::size_t before = baseline_thread_count();
  {
    auto loader = items_builder().batch_size(4).num_workers(3).build(IotaDataset{40});
    epoch_items(loader);
  }
  EXPECT_EQ(thread_count(), before);
}

TEST(MultiThreadLoader, GivesTheSameBatchesAsTheCallerThreadLoaderForAnyWorkerCount) {
  auto reference = items_builder().batch_size(7).shuffle(21).build_batch_loader(IotaDataset{150});
  std::vector<std::vector<std::size_t>> expected;
  for (int epoch = 0; epoch < 3; ++epoch) expected.push_back(epoch_items(reference));
  for (std::size_t workers : {0u, 1u, 2u, 3u, 8u}) {
    auto loader = pairing_loader(
        [](auto&& builder) -> auto& { return builder.batch_size(7).shuffle(21).queue_depth(3); },
        workers, 150, 3);
    for (int epoch = 0; epoch < 3; ++epoch) {
      ASSERT_EQ(epoch_items(loader), expected[epoch]) << workers << " workers, epoch " << epoch;
    }
  }
}

TEST(MultiThreadLoader, DeliversStepsInOrder) {
  auto loader =
      pairing_loader([](auto&& builder) -> auto& { return builder.batch_size(3); }, 4, 90, 1);
  std::size_t expected = 0;
  for (auto& batch : loader.iter()) EXPECT_EQ(batch.step, expected++);
  EXPECT_EQ(expected, 30u);
}

/// Batches made so far, which the test can wait on.
struct MadeCount {
  std::mutex mutex;
  std::condition_variable changed;
  std::size_t made = 0;

  /// Whether `made` reaches `count` within `patience`.
  bool reaches(std::size_t count) {
    std::unique_lock lock(mutex);
    return changed.wait_for(lock, patience, [&] { return made >= count; });
  }
  [[nodiscard]] std::size_t value() {
    const std::lock_guard lock(mutex);
    return made;
  }
};

/// Counts batches made, to check how far workers run ahead of the consumer.
struct CountingBatcher {
  std::shared_ptr<MadeCount> made = std::make_shared<MadeCount>();
  template <class Device>
  std::size_t batch(std::vector<std::size_t> items, const Device&) const {
    {
      const std::lock_guard lock(made->mutex);
      ++made->made;
    }
    made->changed.notify_all();
    return items.size();
  }
};

TEST(MultiThreadLoader, NeverRunsMoreThanQueueDepthBatchesAhead) {
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
    // A slow consumer: the workers fill the queue (3 batches made ahead) before it goes on.
    ASSERT_TRUE(batcher.made->reaches(std::min<std::size_t>(taken + 3, 100)))
        << "the workers did not fill the queue after " << taken << " batches";
    ASSERT_LE(batcher.made->value(), taken + 3) << "after " << taken << " batches";
  }
  EXPECT_EQ(taken, 100u);
}

TEST(MultiThreadLoader, RethrowsAWorkerErrorWithIndexWorkerAndDevice) {
  auto loader =
      items_builder().batch_size(4).num_workers(2).device({1}).build(FailingDataset{40, 17});
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
  auto loader = items_builder().batch_size(4).num_workers(2).build(FailingDataset{40, 17});
  EXPECT_THROW(epoch_items(loader), stoke::DataError);
  EXPECT_THROW(epoch_items(loader), stoke::DataError);  // the workers still serve epochs
}

TEST(MultiThreadLoader, DroppingARangeMidEpochThenTheLoaderDoesNotHang) {
  const std::size_t before = baseline_thread_count();
  {
    // Reads from step 3 on wait for the gate: the workers read them while the range goes.
    const GatedDataset dataset{.count = 400, .gated_from = 6};
    auto loader = items_builder().batch_size(2).num_workers(3).queue_depth(4).build(dataset);
    for (auto& batch : loader.iter()) {
      if (batch.step == 2) break;
    }
    dataset.gate->open();
    // The next epoch starts from a clean window.
    EXPECT_EQ(epoch_items(loader).size(), 400u);
    dataset.gate->close();
    for (auto& batch : loader.iter()) {
      if (batch.step == 1) break;
    }
    dataset.gate->open();  // the workers finish their reads as the loader is dropped
  }
  EXPECT_EQ(thread_count(), before);
}

TEST(MultiThreadLoader, RangeCanOutliveItsLoader) {
  auto range = std::make_unique<
      stoke::BatchRange<stoke::MultiThreadLoader<IotaDataset, ItemsBatcher, Backend>::batch_type>>(
      [] {
        auto loader = items_builder().batch_size(5).num_workers(2).build(IotaDataset{50});
        return loader.iter();
      }());
  std::size_t items = 0;
  for (auto& batch : *range) items += batch.size();
  EXPECT_EQ(items, 50u);
}

TEST(MultiThreadLoader, ANewIterSupersedesAnOpenRange) {
  auto loader = items_builder().batch_size(2).num_workers(2).build(IotaDataset{20});
  auto first = loader.iter();
  auto it = first.begin();
  auto second = loader.iter();
  EXPECT_THROW(++it, stoke::StateError);
  std::size_t items = 0;
  for (auto& batch : second) items += batch.size();
  EXPECT_EQ(items, 20u);
}

TEST(MultiThreadLoader, CopiesStartTheirOwnWorkers) {
  auto loader = items_builder().batch_size(4).num_workers(2).build(IotaDataset{40});
  epoch_items(loader);
  auto copy = loader;
  EXPECT_TRUE(loader.workers_started());
  EXPECT_FALSE(copy.workers_started());
  EXPECT_EQ(epoch_items(copy).size(), 40u);
}

}  // namespace

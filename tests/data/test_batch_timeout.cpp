// The batch timeout: a `get` or `batch` that hangs ends in a `TimeoutError` naming the stuck
// worker, its activity and the dataset index, in bounded time; dropping the loader does not wait
// for the stuck worker, which finishes safely once it returns.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <stoke/stoke.hpp>

#include "stoke_test_support.hpp"
#include "test_sync.hpp"

namespace {

using stoke::testing::Gate;

using namespace std::chrono_literals;
using stoke::cpu::Backend;
using stoke::testing::epoch_items;
using stoke::testing::ItemsBatch;
using stoke::testing::ItemsBatcher;
using ::testing::HasSubstr;
using Clock = std::chrono::steady_clock;

/// Set once the last owner of a gate let go of it: a test waits on it.
class Released {
 public:
  void set() {
    {
      std::lock_guard lock(mutex_);
      released_ = true;
    }
    changed_.notify_all();
  }
  /// Whether it is set within `patience`.
  bool within(std::chrono::milliseconds patience) {
    std::unique_lock lock(mutex_);
    return changed_.wait_for(lock, patience, [&] { return released_; });
  }

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  bool released_ = false;
};

/// A gate that sets `released` when its last owner lets go of it.
std::shared_ptr<Gate> gate_reporting_to(std::shared_ptr<Released> released) {
  return {new Gate, [released = std::move(released)](Gate* gate) {
            delete gate;
            released->set();
          }};
}

/// `get(i)` returns `i`, except `get(hang_at)`, which waits for the gate.
struct HangingDataset {
  std::size_t count = 0;
  std::size_t hang_at = 0;
  std::shared_ptr<Gate> gate = std::make_shared<Gate>();
  [[nodiscard]] std::size_t size() const { return count; }
  [[nodiscard]] std::size_t get(std::size_t index) const {
    if (index == hang_at) gate->wait();
    return index;
  }
};

/// `ItemsBatcher`, except that a batch holding `hang_at` waits for the gate.
struct HangingBatcher {
  std::size_t hang_at = 0;
  std::shared_ptr<Gate> gate = std::make_shared<Gate>();
  template <class Device>
  ItemsBatch<Device> batch(std::vector<std::size_t> items, const Device& device) const {
    for (const std::size_t item : items) {
      if (item == hang_at) gate->wait();
    }
    return {std::move(items), device};
  }
};

using stoke::testing::items_builder;

/// The `TimeoutError` that reading one epoch of `loader` ends in (none: the test fails).
template <class Loader>
std::optional<stoke::TimeoutError> timeout_of(Loader& loader) {
  try {
    (void)epoch_items(loader);
  } catch (const stoke::TimeoutError& error) {
    return error;
  }
  ADD_FAILURE() << "the epoch ended without a timeout";
  return std::nullopt;
}

TEST(BatchTimeout, AGetThatHangsThrowsNamingTheWorkerTheStageAndTheIndex) {
  const HangingDataset dataset{.count = 40, .hang_at = 9};  // step 2 of batches of 4
  auto loader = items_builder().batch_size(4).num_workers(2).batch_timeout(200ms).build(dataset);
  const auto start = Clock::now();
  const auto error = timeout_of(loader);
  const auto waited = Clock::now() - start;
  ASSERT_TRUE(error.has_value());
  EXPECT_GE(waited, 200ms);
  EXPECT_LT(waited, 5s);
  const stoke::DataErrorContext& where = error->context();
  EXPECT_EQ(where.index, 9U);
  EXPECT_EQ(where.activity, "get");
  EXPECT_EQ(where.step, 2U);
  EXPECT_EQ(where.epoch, 0U);
  EXPECT_EQ(where.device, "cpu:0");
  EXPECT_THAT(where.worker, HasSubstr("worker "));
  EXPECT_THAT(error->what(), HasSubstr("step 2 of epoch 0 for device cpu:0 was not ready "
                                       "within 200 ms"));
  EXPECT_THAT(error->what(), HasSubstr(where.worker + " has been in get(index 9) of step 2"));
  dataset.gate->open();
}

TEST(BatchTimeout, ABatcherThatHangsIsNamedWithTheBatchsFirstIndex) {
  const HangingBatcher batcher{.hang_at = 13};  // step 3, whose first index is 12
  auto loader = stoke::DataLoaderBuilder<Backend, HangingBatcher>(batcher)
                    .batch_size(4)
                    .num_workers(1)
                    .batch_timeout(100ms)
                    .build(stoke::testing::IotaDataset{40});
  const auto error = timeout_of(loader);
  ASSERT_TRUE(error.has_value());
  EXPECT_EQ(error->context().activity, "batch");
  EXPECT_EQ(error->context().index, 12U);
  EXPECT_EQ(error->context().step, 3U);
  EXPECT_EQ(error->context().worker, "worker 0");
  batcher.gate->open();
}

TEST(BatchTimeout, TheLoaderGoesOnOnceTheHangingReadReturns) {
  const HangingDataset dataset{.count = 40, .hang_at = 9};
  auto loader = items_builder().batch_size(4).num_workers(2).batch_timeout(100ms).build(dataset);
  ASSERT_TRUE(timeout_of(loader).has_value());
  dataset.gate->open();
  std::vector<std::size_t> expected(40);
  for (std::size_t i = 0; i < expected.size(); ++i) expected[i] = i;
  EXPECT_EQ(epoch_items(loader), expected);  // epoch 1, whole
}

TEST(BatchTimeout, DroppingTheLoaderDoesNotWaitForAWorkerThatStillHangs) {
  const auto released = std::make_shared<Released>();
  HangingDataset dataset{.count = 40, .hang_at = 9, .gate = gate_reporting_to(released)};
  std::shared_ptr<Gate> gate = dataset.gate;
  {
    auto loader =
        items_builder().batch_size(4).num_workers(3).batch_timeout(100ms).build(std::move(dataset));
    ASSERT_TRUE(timeout_of(loader).has_value());
    const auto start = Clock::now();
    {
      auto dropped = std::move(loader);
    }
    EXPECT_LT(Clock::now() - start, 3s) << "the drop waited for the stuck worker";
  }
  EXPECT_GT(gate.use_count(), 1) << "the stuck worker must keep its dataset alive";
  gate->open();  // the detached worker returns, discards its batch and ends
  gate.reset();
  // Every copy of the dataset that held the gate, also the one the detached worker kept, is
  // gone (within 10 s).
  EXPECT_TRUE(released->within(10s));
}

/// The batches the consumer has taken so far, which a `PacedDataset` read waits on.
class Taken {
 public:
  void add() {
    {
      std::lock_guard lock(mutex_);
      ++count_;
    }
    changed_.notify_all();
  }
  /// Whether `count` batches are taken within 10 s.
  bool reaches(std::size_t count) {
    std::unique_lock lock(mutex_);
    return changed_.wait_for(lock, 10s, [&] { return count_ >= count; });
  }

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  std::size_t count_ = 0;
};

/// 24 samples in order, in batches of 4: `get(i)` returns `i` only once the consumer has taken
/// every batch before the one that holds `i`, so no batch is made ahead and every step keeps
/// the consumer waiting on the worker that makes it.
struct PacedDataset {
  static constexpr std::size_t count = 24;
  static constexpr std::size_t batch_size = 4;
  std::shared_ptr<Taken> taken = std::make_shared<Taken>();
  std::shared_ptr<std::vector<std::atomic<std::size_t>>> reads =
      std::make_shared<std::vector<std::atomic<std::size_t>>>(count);  ///< epochs, by index
  [[nodiscard]] std::size_t size() const { return count; }
  [[nodiscard]] std::size_t get(std::size_t index) const {
    const std::size_t epoch = (*reads)[index]++;
    if (!taken->reaches(epoch * (count / batch_size) + index / batch_size)) {
      throw std::runtime_error("the batches before index " + std::to_string(index) +
                               " were never taken");
    }
    return index;
  }
};

TEST(BatchTimeout, BatchesSlowerThanUsualButWithinTheTimeoutAreAllDelivered) {
  const PacedDataset dataset;
  auto loader = items_builder().batch_size(4).num_workers(2).batch_timeout(2000ms).build(dataset);
  for (int epoch = 0; epoch < 2; ++epoch) {
    std::vector<std::size_t> items;
    for (auto& batch : loader.iter()) {
      items.insert(items.end(), batch.data.items.begin(), batch.data.items.end());
      dataset.taken->add();
    }
    EXPECT_EQ(items.size(), 24U);
  }
}

TEST(BatchTimeout, MustBeAtLeastOneMillisecond) {
  EXPECT_THROW(items_builder().batch_timeout(0ms), stoke::UsageError);
}

}  // namespace

// The batch timeout: a `get` or `batch` that hangs ends in a `TimeoutError` naming the stuck
// worker, its stage and the dataset index, in bounded time; dropping the loader does not wait
// for the stuck worker, which finishes safely once it returns.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <stoke/stoke.hpp>

#include "stoke_test_support.hpp"

namespace {

using namespace std::chrono_literals;
using stoke::cpu::Backend;
using stoke::testing::epoch_items;
using stoke::testing::ItemsBatch;
using stoke::testing::ItemsBatcher;
using ::testing::HasSubstr;
using Clock = std::chrono::steady_clock;

/// Closed until `open()`: a read that waits on it hangs until then.
class Gate {
 public:
  void wait() {
    std::unique_lock lock(mutex_);
    opened_.wait(lock, [&] { return open_; });
  }
  void open() {
    {
      std::lock_guard lock(mutex_);
      open_ = true;
    }
    opened_.notify_all();
  }

 private:
  std::mutex mutex_;
  std::condition_variable opened_;
  bool open_ = false;
};

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

auto builder() {
  return stoke::DataLoaderBuilder<Backend, ItemsBatcher>(ItemsBatcher{});
}

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

/// Waits (at most 10 s) until `gate` has no owner but the test: every copy of the dataset that
/// held it, also one a detached worker kept, is gone.
bool released_by_the_loader(const std::shared_ptr<Gate>& gate) {
  const auto deadline = Clock::now() + 10s;
  while (gate.use_count() > 1 && Clock::now() < deadline) std::this_thread::sleep_for(1ms);
  return gate.use_count() == 1;
}

TEST(BatchTimeout, AGetThatHangsThrowsNamingTheWorkerTheStageAndTheIndex) {
  const HangingDataset dataset{.count = 40, .hang_at = 9};  // step 2 of batches of 4
  auto loader = builder().batch_size(4).num_workers(2).batch_timeout(200ms).build(dataset);
  const auto start = Clock::now();
  const auto error = timeout_of(loader);
  const auto waited = Clock::now() - start;
  ASSERT_TRUE(error.has_value());
  EXPECT_GE(waited, 200ms);
  EXPECT_LT(waited, 5s);
  const stoke::DataErrorContext& where = error->context();
  EXPECT_EQ(where.index, 9U);
  EXPECT_EQ(where.stage, "get");
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
  EXPECT_EQ(error->context().stage, "batch");
  EXPECT_EQ(error->context().index, 12U);
  EXPECT_EQ(error->context().step, 3U);
  EXPECT_EQ(error->context().worker, "worker 0");
  batcher.gate->open();
}

TEST(BatchTimeout, TheLoaderGoesOnOnceTheHangingReadReturns) {
  const HangingDataset dataset{.count = 40, .hang_at = 9};
  auto loader = builder().batch_size(4).num_workers(2).batch_timeout(100ms).build(dataset);
  ASSERT_TRUE(timeout_of(loader).has_value());
  dataset.gate->open();
  std::vector<std::size_t> expected(40);
  for (std::size_t i = 0; i < expected.size(); ++i) expected[i] = i;
  EXPECT_EQ(epoch_items(loader), expected);  // epoch 1, whole
}

TEST(BatchTimeout, DroppingTheLoaderDoesNotWaitForAWorkerThatStillHangs) {
  HangingDataset dataset{.count = 40, .hang_at = 9};
  const std::shared_ptr<Gate> gate = dataset.gate;
  {
    auto loader =
        builder().batch_size(4).num_workers(3).batch_timeout(100ms).build(std::move(dataset));
    ASSERT_TRUE(timeout_of(loader).has_value());
    const auto start = Clock::now();
    {
      auto dropped = std::move(loader);
    }
    EXPECT_LT(Clock::now() - start, 3s) << "the drop waited for the stuck worker";
  }
  EXPECT_GT(gate.use_count(), 1) << "the stuck worker must keep its dataset alive";
  gate->open();  // the detached worker returns, discards its batch and ends
  EXPECT_TRUE(released_by_the_loader(gate));
}

TEST(BatchTimeout, BatchesSlowerThanUsualButWithinTheTimeoutAreAllDelivered) {
  struct Slow {
    [[nodiscard]] std::size_t size() const { return 24; }
    [[nodiscard]] std::size_t get(std::size_t index) const {
      std::this_thread::sleep_for(2ms);
      return index;
    }
  };
  auto loader = builder().batch_size(4).num_workers(2).batch_timeout(2000ms).build(Slow{});
  for (int epoch = 0; epoch < 2; ++epoch) EXPECT_EQ(epoch_items(loader).size(), 24U);
}

TEST(BatchTimeout, MustBeAtLeastOneMillisecond) {
  EXPECT_THROW(builder().batch_timeout(0ms), stoke::UsageError);
}

}  // namespace

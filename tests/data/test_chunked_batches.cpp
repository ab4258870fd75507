// ChunkedBatcher: a batch made in row ranges equals the whole batch; the multithread loader has
// the first batch of an epoch filled by several threads (the consumer among them), with the
// same batches, errors that name the row's index and thread, and clean drops.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <memory>
#include <mutex>
#include <numeric>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <stoke/stoke.hpp>

#include "stoke_test_support.hpp"
#include "test_sync.hpp"
#include "toy_images.hpp"

namespace {

using stoke::cpu::Backend;
using stoke::testing::IotaDataset;
using stoke::testing::ToyImages;
using namespace std::chrono_literals;

using stoke::testing::patience;

/// Sample `i` is the row `{i, 2i, 3i}`.
struct RowDataset {
  std::size_t count = 0;
  [[nodiscard]] std::size_t size() const { return count; }
  [[nodiscard]] std::vector<std::int32_t> get(std::size_t i) const {
    const auto v = static_cast<std::int32_t>(i);
    return {v, 2 * v, 3 * v};
  }
};

/// Which threads filled the chunks of one batch made in chunks.
struct FillRecord {
  std::mutex mutex;
  std::condition_variable filled;
  std::set<std::thread::id> threads;
  std::vector<std::size_t> first_items;  ///< the first item of the batch, once per opening
};

/// Holds the chunks of the batches begun in a round until the test releases them, so that the
/// test can drop a range while its first batch is being made in parts.
class Hold {
 public:
  /// Starts a round: the chunks of the batches begun from now on wait until `release`.
  void next_round() {
    const std::lock_guard lock(mutex_);
    ++round_;
    held_ = true;
    entered_ = 0;
  }
  /// The round a batch begun now belongs to.
  [[nodiscard]] std::size_t round() {
    const std::lock_guard lock(mutex_);
    return round_;
  }
  /// A chunk of a batch begun in `round`: waits (up to `patience`) until that round is released.
  void enter(std::size_t round) {
    std::unique_lock lock(mutex_);
    if (round != round_) return;
    ++entered_;
    changed_.notify_all();
    changed_.wait_for(lock, patience, [&] { return !held_ || round_ != round; });
  }
  /// Whether a chunk of this round is held within `patience`.
  bool a_chunk_is_held() {
    std::unique_lock lock(mutex_);
    return changed_.wait_for(lock, patience, [&] { return entered_ > 0; });
  }
  /// Lets the chunks of this round go on.
  void release() {
    {
      const std::lock_guard lock(mutex_);
      held_ = false;
    }
    changed_.notify_all();
  }

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  std::size_t round_ = 0;
  bool held_ = false;
  std::size_t entered_ = 0;  ///< chunks of this round that were held
};

/// How `RecordingBatcher` fills a chunk. A chunk waits (up to `patience`) until
/// `threads_per_batch` threads have filled chunks of its batch; a chunk whose rows hold
/// `failing_item` throws; with a `hold`, a chunk waits for it too.
struct FillSettings {
  std::shared_ptr<FillRecord> record = std::make_shared<FillRecord>();
  std::size_t threads_per_batch = 1;
  std::optional<std::size_t> failing_item;
  std::shared_ptr<Hold> hold;
};

/// A batch of dataset indices being filled in chunks by `RecordingBatcher`.
class RecordedPending {
 public:
  RecordedPending(FillSettings settings, std::vector<std::size_t> items)
      : settings_(std::move(settings)),
        items_(std::move(items)),
        out_(items_.size()),
        round_(settings_.hold ? settings_.hold->round() : 0) {}
  [[nodiscard]] std::size_t rows() const { return items_.size(); }
  void fill(std::size_t first, std::size_t last) {
    FillRecord& record = *settings_.record;
    {
      std::unique_lock lock(record.mutex);
      threads_->insert(std::this_thread::get_id());
      record.threads.insert(std::this_thread::get_id());
      record.filled.notify_all();
      record.filled.wait_for(lock, patience,
                             [&] { return threads_->size() >= settings_.threads_per_batch; });
    }
    if (settings_.hold) settings_.hold->enter(round_);
    for (std::size_t i = first; i < last; ++i) {
      if (items_[i] == settings_.failing_item) {
        throw std::runtime_error("cannot batch item " + std::to_string(items_[i]));
      }
      out_[i] = items_[i];
    }
  }
  [[nodiscard]] std::vector<std::size_t> finish() && { return std::move(out_); }

 private:
  FillSettings settings_;
  std::vector<std::size_t> items_;
  std::vector<std::size_t> out_;
  std::shared_ptr<std::set<std::thread::id>> threads_ =
      std::make_shared<std::set<std::thread::id>>();
  std::size_t round_;  ///< of `settings_.hold`, when the batch was begun
};

/// A `ChunkedBatcher` of dataset indices that records the threads filling each batch made in
/// chunks, and the first item of every batch it began.
struct RecordingBatcher {
  FillSettings settings;

  [[nodiscard]] std::vector<std::size_t> batch(std::vector<std::size_t> items,
                                               const stoke::cpu::Device&) const {
    return items;
  }
  [[nodiscard]] RecordedPending begin_batch(std::vector<std::size_t> items,
                                            const stoke::cpu::Device&) const {
    {
      const std::lock_guard lock(settings.record->mutex);
      settings.record->first_items.push_back(items.empty() ? SIZE_MAX : items.front());
    }
    return {settings, std::move(items)};
  }
};

static_assert(
    stoke::ChunkedBatcher<stoke::cpu::StackBatcher<float>, Backend, std::vector<std::int32_t>>);
static_assert(stoke::ChunkedBatcher<stoke::cpu::ImageBatcher, Backend, stoke::LabeledImage>);
static_assert(stoke::ChunkedBatcher<RecordingBatcher, Backend, std::size_t>);
// A batch of plain numbers is not worth splitting, and a plain batcher cannot be split.
static_assert(stoke::Batcher<stoke::cpu::StackBatcher<float>, Backend, std::int32_t>);
static_assert(!stoke::ChunkedBatcher<stoke::cpu::StackBatcher<float>, Backend, std::int32_t>);
static_assert(!stoke::ChunkedBatcher<stoke::testing::ItemsBatcher, Backend, std::size_t>);

/// Whether this machine lets two threads make chunks at once (the pool allows one per
/// processor).
bool two_chunk_makers() {
  return std::thread::hardware_concurrency() >= 2;
}

TEST(ChunkedBatcher, AStackFilledInRangesInAnyOrderEqualsTheWholeBatch) {
  const RowDataset data{9};
  std::vector<std::vector<std::int32_t>> items;
  for (std::size_t i = 0; i < data.size(); ++i) items.push_back(data.get(i));
  const stoke::cpu::StackBatcher<float> batcher{.scale = 0.5F, .offset = 1.0F};
  const auto whole = batcher.batch(items, stoke::cpu::Device{});
  auto pending = batcher.begin_batch(items, stoke::cpu::Device{});
  ASSERT_EQ(pending.rows(), 9u);
  pending.fill(5, 9);
  pending.fill(0, 2);
  pending.fill(2, 5);
  const auto chunks = std::move(pending).finish();
  EXPECT_EQ(chunks.shape(), whole.shape());
  EXPECT_THAT(chunks.values(), testing::ElementsAreArray(whole.values()));
  EXPECT_EQ(chunks.values()[3 * 4 + 2], 3.0F * 4 * 0.5F + 1.0F);
}

TEST(ChunkedBatcher, AStackRefusesRangesOfDifferentLengthsBeforeAnyRowIsFilled) {
  const stoke::cpu::StackBatcher<float> batcher;
  std::vector<std::vector<std::int32_t>> items{{1, 2}, {3, 4}, {5}};
  try {
    (void)batcher.begin_batch(items, stoke::cpu::Device{});
    FAIL() << "ranges of 2 and 1 elements were stacked";
  } catch (const stoke::InputError& error) {
    EXPECT_THAT(error.what(),
                testing::HasSubstr("item 2 of the batch has 1 elements, item 0 has 2"));
  }
}

TEST(ChunkedBatcher, ImagesFilledInRangesEqualTheWholeClassificationBatch) {
  const ToyImages images(7);
  std::vector<stoke::LabeledImage> items;
  for (std::size_t i = 0; i < images.size(); ++i) items.push_back(images.get(i));
  const stoke::cpu::ImageBatcher batcher{.mean = 0.25F, .std = 0.5F};
  const auto whole = batcher.batch(items, stoke::cpu::Device{});
  auto pending = batcher.begin_batch(items, stoke::cpu::Device{});
  pending.fill(3, 7);
  pending.fill(0, 3);
  const auto chunks = std::move(pending).finish();
  EXPECT_THAT(chunks.inputs.values(), testing::ElementsAreArray(whole.inputs.values()));
  EXPECT_EQ(chunks.labels, whole.labels);
}

TEST(WorkerPoolChunks, TheWaitingConsumerMakesChunksOfTheStepItNeeds) {
  if (!two_chunk_makers()) GTEST_SKIP() << "one processor: only one thread makes chunks at once";
  using Pool = stoke::detail::WorkerPool<int>;

  /// Two chunks; each waits until the consumer has made one, so the step completes only if
  /// the consumer helps.
  struct WaitForConsumer : stoke::detail::BatchInChunks<int> {
    std::mutex mutex;
    std::condition_variable made;
    bool consumer_made = false;
    int sum = 0;
    [[nodiscard]] std::size_t chunks() const override { return 2; }
    void make_chunk(std::size_t chunk, std::size_t worker) override {
      std::unique_lock lock(mutex);
      if (worker == Pool::consumer) consumer_made = true;
      made.notify_all();
      made.wait_for(lock, patience, [&] { return consumer_made; });
      sum += static_cast<int>(chunk) + 1;
    }
    int finish() override { return consumer_made ? sum : -1; }
  };

  Pool pool(1, 2);
  std::vector<std::size_t> opened;
  std::mutex opened_mutex;
  /// Makes steps whole as 100 + step, and opens them as `WaitForConsumer`, recording which.
  struct Steps : stoke::detail::BatchMaker<int> {
    std::vector<std::size_t>* opened = nullptr;
    std::mutex* opened_mutex = nullptr;
    int make(std::size_t step, std::size_t) const override { return 100 + static_cast<int>(step); }
    [[nodiscard]] bool makes_chunks() const noexcept override { return true; }
    std::shared_ptr<stoke::detail::BatchInChunks<int>> open(std::size_t step,
                                                            std::size_t) const override {
      const std::lock_guard lock(*opened_mutex);
      opened->push_back(step);
      return std::make_shared<WaitForConsumer>();
    }
  };
  auto steps = std::make_shared<Steps>();
  steps->opened = &opened;
  steps->opened_mutex = &opened_mutex;
  const std::size_t generation = pool.start(3, std::move(steps));
  const auto start = std::chrono::steady_clock::now();
  const std::optional<int> first = pool.take(generation);
  EXPECT_LT(std::chrono::steady_clock::now() - start, patience) << "the consumer did not help";
  EXPECT_EQ(first, 3);  // both chunks made, one of them by the consumer
  // Later steps are made whole or in chunks, but always in order.
  for (int step = 1; step < 3; ++step) {
    const std::optional<int> value = pool.take(generation);
    ASSERT_TRUE(value.has_value());
    EXPECT_TRUE(*value == 100 + step || *value == 3) << "step " << step;
  }
  EXPECT_EQ(pool.take(generation), std::nullopt);
  const std::lock_guard lock(opened_mutex);
  ASSERT_FALSE(opened.empty());
  EXPECT_EQ(opened.front(), 0u);  // the first step of an epoch is always made in chunks
}

TEST(WorkerPoolChunks, ABatchWhoseChunksAllFailReportsTheFirstChunksErrorWhicheverFailedFirst) {
  /// Two chunks, both failing; the head batch hears of chunk 1's failure first.
  struct TwoChunks : stoke::detail::BatchInChunks<int> {
    [[nodiscard]] std::size_t chunks() const override { return 2; }
    void make_chunk(std::size_t, std::size_t) override {}
    int finish() override { return 0; }
  };
  stoke::detail::HeadBatch<int> head(std::make_shared<TwoChunks>(), 2, 0, 0);
  ASSERT_TRUE(head.can_claim(2));
  EXPECT_EQ(head.claim(), 0u);
  EXPECT_EQ(head.claim(), 1u);
  const auto failure = [](const char* what) {
    return std::make_exception_ptr(std::runtime_error(what));
  };
  EXPECT_FALSE(head.finish_chunk(1, failure("chunk 1 failed")));
  EXPECT_TRUE(head.finish_chunk(0, failure("chunk 0 failed")));
  const auto result = head.result();
  ASSERT_TRUE(result.error);
  try {
    std::rethrow_exception(result.error);
  } catch (const std::runtime_error& error) {
    EXPECT_STREQ(error.what(), "chunk 0 failed");
  }
}

TEST(MultiThreadLoaderChunks, TheFirstBatchOfEveryEpochIsFilledByMoreThanOneThread) {
  if (!two_chunk_makers()) GTEST_SKIP() << "one processor: only one thread makes chunks at once";
  const RecordingBatcher batcher{{.threads_per_batch = 2}};
  auto loader = stoke::DataLoaderBuilder<Backend, RecordingBatcher>(batcher)
                    .batch_size(16)
                    .shuffle(3)
                    .num_workers(2)
                    .build(IotaDataset{64});
  for (int epoch = 0; epoch < 3; ++epoch) {
    const auto start = std::chrono::steady_clock::now();
    auto range = loader.iter();
    auto batch = range.begin();
    EXPECT_LT(std::chrono::steady_clock::now() - start, patience)
        << "epoch " << epoch << ": one thread filled the first batch alone";
    EXPECT_EQ(batch->step, 0u);
    EXPECT_EQ(batch->data, batch->indices);  // every row filled, with its own item
    for (++batch; batch != range.end(); ++batch) EXPECT_EQ(batch->data, batch->indices);
  }
  const std::lock_guard lock(batcher.settings.record->mutex);
  EXPECT_GE(batcher.settings.record->first_items.size(), 3u);  // at least one opening per epoch
  EXPECT_GE(batcher.settings.record->threads.size(), 2u);
}

TEST(MultiThreadLoaderChunks, BatchesMadeInPartsEqualTheCallerThreadLoadersForAnyWorkerCount) {
  const auto build = [](std::size_t workers) {
    return stoke::DataLoaderBuilder<Backend, stoke::cpu::StackBatcher<float>>({.scale = 0.25F})
        .batch_size(6)
        .shuffle(11)
        .num_workers(workers)
        .queue_depth(2)
        .build(RowDataset{40});
  };
  auto reference = build(0);
  std::vector<std::vector<std::vector<float>>> expected(3);
  for (auto& epoch : expected) {
    for (const auto& batch : reference.iter()) {
      epoch.emplace_back(batch.data.values().begin(), batch.data.values().end());
    }
  }
  for (const std::size_t workers : {1u, 2u, 3u}) {
    auto loader = build(workers);
    for (std::size_t epoch = 0; epoch < expected.size(); ++epoch) {
      std::vector<std::vector<float>> seen;
      for (const auto& batch : loader.iter()) {
        seen.emplace_back(batch.data.values().begin(), batch.data.values().end());
      }
      EXPECT_EQ(seen, expected[epoch]) << workers << " workers, epoch " << epoch;
    }
  }
}

TEST(MultiThreadLoaderChunks, AFailedChunkNamesTheIndexOfItsRowAndTheThreadThatFilledIt) {
  // Batches of 4 rows, cut into 4 chunks of one row: the failing row is named exactly.
  const RecordingBatcher batcher{{.failing_item = 2}};
  auto loader = stoke::DataLoaderBuilder<Backend, RecordingBatcher>(batcher)
                    .batch_size(4)
                    .num_workers(1)
                    .build(IotaDataset{12});
  try {
    for (const auto& batch : loader.iter()) (void)batch;
    FAIL() << "the failing row was not reported";
  } catch (const stoke::DataError& error) {
    EXPECT_EQ(error.context().index, 2u);
    EXPECT_EQ(error.context().step, 0u);
    EXPECT_EQ(error.context().activity, "batch");
    EXPECT_THAT(error.context().worker, testing::AnyOf("worker 0", "consumer"));
    EXPECT_THAT(error.what(), testing::HasSubstr("cannot batch item 2"));
  }
  // The loader goes on: another epoch fails the same way, not with a hang.
  EXPECT_THROW(
      {
        for (const auto& batch : loader.iter()) (void)batch;
      },
      stoke::DataError);
}

TEST(MultiThreadLoaderChunks, ABatchThatCannotBeginNamesItsFirstIndex) {
  /// Row `i` has `1 + (i == 5)` elements: the batch holding sample 5 cannot be stacked.
  struct RaggedRows {
    [[nodiscard]] std::size_t size() const { return 8; }
    [[nodiscard]] std::vector<std::int32_t> get(std::size_t i) const {
      return std::vector<std::int32_t>(i == 5 ? 2 : 1, static_cast<std::int32_t>(i));
    }
  };
  auto loader = stoke::DataLoaderBuilder<Backend, stoke::cpu::StackBatcher<float>>({})
                    .batch_size(4)
                    .num_workers(2)
                    .build(RaggedRows{});
  auto range = loader.iter();
  auto batch = range.begin();
  EXPECT_EQ(batch->indices, (std::vector<std::size_t>{0, 1, 2, 3}));
  try {
    ++batch;
    FAIL() << "a ragged batch was stacked";
  } catch (const stoke::DataError& error) {
    EXPECT_EQ(error.context().index, 4u);  // the batch's first index
    EXPECT_EQ(error.context().activity, "batch");
    EXPECT_THAT(error.what(), testing::HasSubstr("item 1 of the batch has 2 elements"));
  }
}

TEST(MultiThreadLoaderChunks, DroppingARangeWhileItsFirstBatchIsMadeInPartsDoesNotHang) {
  const RecordingBatcher batcher{{.hold = std::make_shared<Hold>()}};
  Hold& hold = *batcher.settings.hold;
  auto loader = stoke::DataLoaderBuilder<Backend, RecordingBatcher>(batcher)
                    .batch_size(32)
                    .shuffle(5)
                    .num_workers(2)
                    .build(IotaDataset{128});
  for (int round = 0; round < 5; ++round) {
    hold.next_round();
    {
      auto range = loader.iter();  // the workers open the first batch, then the range goes
      ASSERT_TRUE(hold.a_chunk_is_held()) << "round " << round << ": no chunk was made";
    }
    hold.release();
  }
  {
    auto range = loader.iter();
    auto batch = range.begin();  // one batch taken, the next ones dropped while being made
    EXPECT_EQ(batch->data, batch->indices);
  }
  std::vector<std::size_t> seen;
  for (const auto& batch : loader.iter()) {
    EXPECT_EQ(batch.data, batch.indices);
    seen.insert(seen.end(), batch.data.begin(), batch.data.end());
  }
  std::sort(seen.begin(), seen.end());
  std::vector<std::size_t> every(128);
  std::iota(every.begin(), every.end(), std::size_t{0});
  EXPECT_EQ(seen, every);
}

}  // namespace

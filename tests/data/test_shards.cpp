// Shards: the shard cache (residency bound, least recently used, reading ahead in plan order),
// ShardedArrays (rows of many files as one dataset, checked at open), windows across shard ends,
// and a shard-aware loader that reads each shard once per epoch.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <numeric>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <stoke/stoke.hpp>

#include "stoke_test_files.hpp"
#include "stoke_test_support.hpp"
#include "test_sync.hpp"

namespace {

using namespace std::chrono_literals;
using ::testing::HasSubstr;

constexpr std::size_t columns = 3;

/// The value at (row, column) of the concatenated array of every fake file.
float value_at(std::size_t row, std::size_t column) {
  return static_cast<float>(row * 10 + column);
}

/// Fake array files "shard<k>" of `rows[k]` rows of `columns` floats each, counting reads.
struct FakeFiles {
  std::vector<std::size_t> rows;
  std::shared_ptr<std::vector<std::atomic<int>>> loads;
  std::shared_ptr<std::atomic<int>> fail_shard = std::make_shared<std::atomic<int>>(-1);
  /// (shard, rows) of every read of a few rows (`format_with_heads`).
  std::shared_ptr<std::vector<std::pair<std::size_t, std::size_t>>> heads =
      std::make_shared<std::vector<std::pair<std::size_t, std::size_t>>>();
  std::shared_ptr<std::mutex> heads_mutex = std::make_shared<std::mutex>();

  explicit FakeFiles(std::vector<std::size_t> shard_rows)
      : rows(std::move(shard_rows)),
        loads(std::make_shared<std::vector<std::atomic<int>>>(rows.size())) {}

  [[nodiscard]] std::vector<std::filesystem::path> paths() const {
    std::vector<std::filesystem::path> out;
    for (std::size_t k = 0; k < rows.size(); ++k) out.emplace_back("shard" + std::to_string(k));
    return out;
  }
  [[nodiscard]] static std::size_t shard_of(const std::filesystem::path& path) {
    return std::stoul(path.string().substr(5));
  }
  [[nodiscard]] stoke::ArrayFileFormat format() const {
    FakeFiles self = *this;
    return {.info =
                [self](const std::filesystem::path& path) {
                  return stoke::ArrayInfo{stoke::DType::f32, {self.rows[shard_of(path)], columns}};
                },
            .load = [self](const std::filesystem::path& path) { return self.load(path); }};
  }
  /// `format()`, and reads of a few rows (the heads of windows), recorded in `heads` and not
  /// counted as reads of the shard.
  [[nodiscard]] stoke::ArrayFileFormat format_with_heads() const {
    stoke::ArrayFileFormat with_heads = format();
    FakeFiles self = *this;
    with_heads.read_rows = [self](const std::filesystem::path& path, std::size_t first,
                                  std::size_t count) {
      const std::size_t k = shard_of(path);
      std::size_t begin = 0;
      for (std::size_t j = 0; j < k; ++j) begin += self.rows[j];
      std::vector<float> values;
      for (std::size_t r = first; r < first + count; ++r) {
        for (std::size_t c = 0; c < columns; ++c) values.push_back(value_at(begin + r, c));
      }
      std::vector<std::byte> bytes(values.size() * sizeof(float));
      std::memcpy(bytes.data(), values.data(), bytes.size());
      const std::lock_guard lock(*self.heads_mutex);
      self.heads->emplace_back(k, count);
      return stoke::ArrayShard(path, {stoke::DType::f32, {count, columns}}, std::move(bytes));
    };
    return with_heads;
  }
  [[nodiscard]] stoke::ArrayShard load(const std::filesystem::path& path) const {
    const std::size_t k = shard_of(path);
    if (static_cast<int>(k) == fail_shard->load()) {
      throw stoke::InputError("stoke: '" + path.string() + "' is unreadable (injected)");
    }
    ++(*loads)[k];
    std::size_t first = 0;
    for (std::size_t j = 0; j < k; ++j) first += rows[j];
    std::vector<float> values;
    for (std::size_t r = 0; r < rows[k]; ++r) {
      for (std::size_t c = 0; c < columns; ++c) values.push_back(value_at(first + r, c));
    }
    std::vector<std::byte> bytes(values.size() * sizeof(float));
    std::memcpy(bytes.data(), values.data(), bytes.size());
    return {path, stoke::ArrayInfo{stoke::DType::f32, {rows[k], columns}}, std::move(bytes)};
  }
  [[nodiscard]] int total_loads() const {
    int total = 0;
    for (const auto& count : *loads) total += count.load();
    return total;
  }
};

using stoke::testing::patience;

/// All reads in `counts`, the reads of each shard.
int total(const std::vector<int>& counts) {
  return std::accumulate(counts.begin(), counts.end(), 0);
}

/// The reads of each shard of a `CountedCache`, which the test can wait on (the cache's I/O
/// threads read too).
struct Reads {
  std::mutex mutex;
  std::condition_variable changed;
  std::vector<int> counts;
};

/// A cache of integers standing for shards, read by counting loads.
struct CountedCache {
  std::shared_ptr<Reads> reads;
  stoke::ShardCache<int> cache;
  CountedCache(std::size_t shards, stoke::ShardCacheOptions options)
      : reads(std::make_shared<Reads>()),
        cache(
            shards,
            [reads = reads](std::size_t s) {
              {
                const std::lock_guard lock(reads->mutex);
                ++reads->counts[s];
              }
              reads->changed.notify_all();
              return static_cast<int>(s) * 100;
            },
            [](const int&) { return std::size_t{1}; }, options) {
    reads->counts.assign(shards, 0);
  }

  /// How many times shard `s` was read.
  [[nodiscard]] int reads_of(std::size_t s) const { return all_reads()[s]; }
  /// How many times each shard was read.
  [[nodiscard]] std::vector<int> all_reads() const {
    const std::lock_guard lock(reads->mutex);
    return reads->counts;
  }
  /// Whether `done(counts)` holds, for the reads of each shard, within `time`: checked at every
  /// read, so the wait ends as soon as it does.
  template <class Done>
  bool reads_reach(Done done, std::chrono::milliseconds time = patience) const {
    std::unique_lock lock(reads->mutex);
    return reads->changed.wait_for(lock, time, [&] { return done(reads->counts); });
  }
  /// Whether `loads` reads are made resident (counted in `stats().loads`) within `patience`.
  /// A read ahead lands just after the loader returns, in the I/O thread, which tells nothing
  /// outside the cache when it has: this waits for the loader calls, then spins for that step.
  bool landed(int loads) const {
    if (!reads_reach([&](const std::vector<int>& counts) { return total(counts) >= loads; })) {
      return false;
    }
    const auto deadline = std::chrono::steady_clock::now() + patience;
    while (cache.stats().loads < static_cast<std::size_t>(loads)) {
      if (std::chrono::steady_clock::now() > deadline) return false;
      std::this_thread::yield();
    }
    return true;
  }
};

TEST(ShardCache, ReadsAheadAllButTheShardInUseByItsOldNameToo) {
  EXPECT_EQ(stoke::read_ahead_depth({.resident = 3}), 2u);
  EXPECT_EQ(stoke::read_ahead_depth({.resident = 1}), 0u);
  EXPECT_EQ(stoke::read_ahead_window({.resident = 3}), 2u);  // the old name
}

TEST(ShardCache, KeepsAtMostKShardsAndEvictsTheLeastRecentlyUsed) {
  CountedCache counted(5, {.resident = 2, .io_threads = 0});
  auto& cache = counted.cache;
  EXPECT_EQ(*cache.acquire(0), 0);
  EXPECT_EQ(*cache.acquire(1), 100);
  EXPECT_EQ(*cache.acquire(0), 0);    // 0 is now the most recently used
  EXPECT_EQ(*cache.acquire(2), 200);  // evicts 1
  EXPECT_EQ(*cache.acquire(0), 0);
  EXPECT_EQ(*cache.acquire(1), 100);  // read again
  EXPECT_EQ(counted.all_reads(), (std::vector<int>{1, 2, 1, 0, 0}));
  const auto stats = cache.stats();
  EXPECT_EQ(stats.max_resident, 2U);
  EXPECT_EQ(stats.hits, 2U);
  EXPECT_EQ(stats.misses, 4U);
  EXPECT_EQ(stats.evictions, 2U);
}

TEST(ShardCache, ReadsThePlansNextShardsAheadAndNeverHoldsMoreThanK) {
  CountedCache counted(6, {.resident = 3, .io_threads = 1});
  auto& cache = counted.cache;
  const std::vector<std::size_t> plan{4, 2, 5, 0, 1, 3};
  cache.plan(plan);
  for (std::size_t step = 0; step < plan.size(); ++step) {
    const std::size_t s = plan[step];
    EXPECT_EQ(*cache.acquire(s), static_cast<int>(s) * 100);
    // While this one is "trained on", the I/O thread reads the next one.
    const std::size_t next = plan[step + 1 < plan.size() ? step + 1 : step];
    ASSERT_TRUE(counted.reads_reach([&](const std::vector<int>& reads) { return reads[next] > 0; }))
        << "shard " << next << " was not read ahead";
    EXPECT_LE(cache.resident_count(), 3U);
  }
  const auto stats = cache.stats();
  EXPECT_EQ(counted.all_reads(), (std::vector<int>{1, 1, 1, 1, 1, 1})) << "each shard read once";
  EXPECT_GE(stats.hits + stats.waits, 5U) << "the shards after the first were read ahead";
  EXPECT_LE(stats.max_resident, 3U);
}

TEST(ShardCache, TheEpochsFirstShardIsReadAloneThenTheOthersAheadTogether) {
  // Shard 0's read waits until the test lets it go; meanwhile no other read may begin (it would
  // take a share of the bandwidth the first batch waits on). Then two I/O threads read on.
  struct Gate {
    std::mutex mutex;
    std::condition_variable changed;
    bool first_released = false;
    bool first_entered = false;
    std::vector<std::size_t> began;  ///< reads begun, in order
  };
  auto gate = std::make_shared<Gate>();
  stoke::ShardCache<int> cache(
      5,
      [gate](std::size_t s) {
        std::unique_lock lock(gate->mutex);
        gate->began.push_back(s);
        if (s == 0) {
          gate->first_entered = true;
          gate->changed.notify_all();
          gate->changed.wait_for(lock, patience, [&] { return gate->first_released; });
        }
        gate->changed.notify_all();
        return static_cast<int>(s);
      },
      [](const int&) { return std::size_t{1}; }, {.resident = 4, .io_threads = 2});
  cache.plan({0, 1, 2, 3, 4});
  std::thread consumer([&] { EXPECT_EQ(*cache.acquire(0), 0); });
  {
    std::unique_lock lock(gate->mutex);
    ASSERT_TRUE(gate->changed.wait_for(lock, patience, [&] { return gate->first_entered; }));
    // Time for a second I/O thread to begin a read, were it allowed to.
    gate->changed.wait_for(lock, 50ms, [&] { return gate->began.size() > 1; });
    EXPECT_EQ(gate->began, (std::vector<std::size_t>{0})) << "a read began beside the first";
    gate->first_released = true;
  }
  gate->changed.notify_all();
  consumer.join();
  std::unique_lock lock(gate->mutex);
  EXPECT_TRUE(gate->changed.wait_for(lock, patience, [&] { return gate->began.size() >= 4; }))
      << "the shards after the first were not read ahead";
}

TEST(ShardCache, AFailedReadReachesEveryAcquisitionAndIsRetried) {
  std::atomic<bool> broken{true};
  stoke::ShardCache<int> cache(
      2,
      [&](std::size_t s) {
        if (broken) throw stoke::InputError("stoke: shard " + std::to_string(s) + " is broken");
        return 7;
      },
      [](const int&) { return std::size_t{1}; }, {.resident = 2, .io_threads = 0});
  EXPECT_THAT([&] { (void)cache.acquire(1); },
              ::testing::ThrowsMessage<stoke::InputError>(HasSubstr("shard 1 is broken")));
  broken = false;
  EXPECT_EQ(*cache.acquire(1), 7);
}

TEST(ShardCache, RespectsAByteBudget) {
  stoke::ShardCache<std::vector<char>> cache(
      4, [](std::size_t s) { return std::vector<char>(100 * (s + 1)); },
      [](const std::vector<char>& shard) { return shard.size(); },
      {.resident = 4, .max_bytes = 350, .io_threads = 0});
  (void)cache.acquire(0);  // 100
  (void)cache.acquire(1);  // 200: 300 in all
  (void)cache.acquire(2);  // 300: 0 and 1 must go
  EXPECT_EQ(cache.resident_count(), 1U);
}

TEST(ShardCache, KeepsTheShardBeforeTheCursorForConsumersThatLagBehind) {
  // Two consumers (two devices of one rank) read the plan's shards; the one ahead moves on to
  // shard 1 while the other still has a batch of shard 0 to make. The read ahead must not
  // evict shard 0 to read a second shard ahead.
  CountedCache counted(4, {.resident = 3, .io_threads = 1});
  auto& cache = counted.cache;
  cache.plan({0, 1, 2, 3});
  (void)cache.acquire(0);
  // 1 and 2 are read ahead.
  ASSERT_TRUE(counted.reads_reach([](const std::vector<int>& reads) { return total(reads) >= 3; }));
  // The consumer ahead enters shard 1. The read ahead, which would evict 0 to read 3, is given
  // 30 ms to act (the wait ends at once if it reads 3).
  (void)cache.acquire(1);
  (void)counted.reads_reach([](const std::vector<int>& reads) { return reads[3] > 0; }, 30ms);
  (void)cache.acquire(0);  // the one behind
  EXPECT_EQ(counted.reads_of(0), 1) << "shard 0 was evicted while a consumer still read it";
  (void)cache.acquire(2);  // now everyone has left shard 0: 3 is read ahead in its place
  ASSERT_TRUE(counted.reads_reach([](const std::vector<int>& reads) { return reads[3] == 1; }));
  // Nothing is read again: the I/O thread is given 30 ms more (the wait ends at a fifth read).
  (void)counted.reads_reach([](const std::vector<int>& reads) { return total(reads) > 4; }, 30ms);
  EXPECT_EQ(counted.all_reads(), (std::vector<int>{1, 1, 1, 1}));
  EXPECT_LE(cache.stats().max_resident, 3U);
}

TEST(ShardCache, AReadOnDemandEvictsTheKeptShardNeededLast) {
  // Every resident shard is one the plan keeps (0 being read, 1 and 2 read ahead); a shard
  // outside the plan is read on demand. It must evict 2, which the plan needs last, not 0,
  // which is the least recently used only because 1 and 2 were read after it.
  CountedCache counted(6, {.resident = 3, .io_threads = 1});
  auto& cache = counted.cache;
  cache.plan({0, 1, 2, 3, 4});
  (void)cache.acquire(0);
  // 1 and 2 are read ahead and resident.
  ASSERT_TRUE(counted.landed(3));
  // The I/O thread has nothing more to read (the plan keeps only 0, 1 and 2); it is given 30 ms
  // to show otherwise (the wait ends at a fourth read).
  (void)counted.reads_reach([](const std::vector<int>& reads) { return total(reads) > 3; }, 30ms);
  EXPECT_EQ(*cache.acquire(5), 500);
  EXPECT_EQ(*cache.acquire(0), 0);
  EXPECT_EQ(*cache.acquire(1), 100);
  EXPECT_EQ(counted.reads_of(0), 1) << "the shard being read was evicted";
  EXPECT_EQ(counted.reads_of(1), 1) << "the next shard was evicted";
}

TEST(ShardedArrays, RowsOfAllFilesFollowEachOther) {
  const FakeFiles files({4, 0, 3, 5});
  const stoke::ShardedArrays<float> arrays(files.paths(), files.format());
  ASSERT_EQ(arrays.size(), 12U);
  EXPECT_EQ(arrays.shard_begins(), (std::vector<std::size_t>{0, 4, 4, 7}));
  EXPECT_EQ(arrays.info().shape, (std::vector<std::size_t>{12, columns}));
  for (std::size_t i = 0; i < arrays.size(); ++i) {
    const auto row = arrays.get(i);
    ASSERT_EQ(row.values.size(), columns);
    for (std::size_t c = 0; c < columns; ++c) EXPECT_EQ(row.values[c], value_at(i, c)) << i;
  }
}

TEST(ShardedArrays, RowsAcrossAFilesEndAreCopiedFromBoth) {
  const FakeFiles files({4, 3, 5});
  const stoke::ShardedArrays<float> arrays(files.paths(), files.format());
  const auto inside = arrays.rows(4, 3);  // all of shard 1: a view
  const auto across = arrays.rows(2, 7);  // shards 0, 1 and 2
  ASSERT_EQ(across.values.size(), 7 * columns);
  for (std::size_t r = 0; r < 7; ++r) {
    for (std::size_t c = 0; c < columns; ++c) {
      EXPECT_EQ(across.values[r * columns + c], value_at(2 + r, c));
    }
  }
  EXPECT_EQ(inside.values.front(), value_at(4, 0));
  EXPECT_THROW((void)arrays.rows(10, 3), stoke::UsageError);
}

TEST(ShardedArrays, RefusesFilesWhoseRowsDifferNamingBoth) {
  FakeFiles files({4, 3});
  stoke::ArrayFileFormat format = files.format();
  const auto good = format.info;
  format.info = [good](const std::filesystem::path& path) {
    stoke::ArrayInfo info = good(path);
    if (path == "shard1") info.shape = {3, columns + 1};
    return info;
  };
  EXPECT_THAT([&] { stoke::ShardedArrays<float>(files.paths(), format); },
              ::testing::ThrowsMessage<stoke::InputError>(
                  AllOf(HasSubstr("'shard1' holds float32 [3, 4]"), HasSubstr("'shard0'"))));
  EXPECT_THAT([&] { stoke::ShardedArrays<double>(files.paths(), files.format()); },
              ::testing::ThrowsMessage<stoke::InputError>(
                  HasSubstr("'shard0' holds float32, the dataset reads float64")));
}

TEST(ShardedArrays, AFileThatChangedSinceOpeningIsRefusedWhenRead) {
  FakeFiles files({4, 3});
  stoke::ArrayFileFormat format = files.format();
  format.load = [files](const std::filesystem::path& path) {
    stoke::ArrayShard shard = files.load(path);
    return stoke::ArrayShard(path, {stoke::DType::f32, {2, columns}},
                             std::vector<std::byte>(2 * columns * sizeof(float)));
  };
  const stoke::ShardedArrays<float> arrays(files.paths(), format);
  EXPECT_THAT([&] { (void)arrays.get(5); },
              ::testing::ThrowsMessage<stoke::InputError>(
                  HasSubstr("'shard1' holds float32 [2, 3] now, float32 [3, 3] when")));
}

TEST(ShardedArrays, WindowsAcrossShardEndsAreKeptAndEqualTheConcatenatedArray) {
  const FakeFiles files({5, 4, 6});  // 15 rows
  const auto windows =
      stoke::ShardedArrays<float>(files.paths(), files.format()) | stoke::windows(4, 2);
  ASSERT_EQ(windows.size(), (15U - 4U) / 2U + 1U);  // 6 windows, 3 of them across an end
  for (std::size_t w = 0; w < windows.size(); ++w) {
    const stoke::ArrayRow<float> window = windows.get(w);  // 4 consecutive rows
    ASSERT_EQ(window.values.size(), 4 * columns);
    for (std::size_t t = 0; t < 4; ++t) {
      EXPECT_EQ(window.values[t * columns + 1], value_at(w * 2 + t, 1))
          << "window " << w << " step " << t;
    }
  }
  // A window belongs to the shard it starts in: shard 1 begins at row 5, its first window at 6.
  EXPECT_EQ(windows.shard_begins(), (std::vector<std::size_t>{0, 3, 5}));
}

TEST(ShardedArrays, AWindowRunningIntoAShardNotResidentReadsOnlyTheRowsItNeeds) {
  const FakeFiles files({5, 4, 6});
  stoke::ArrayFileFormat format = files.format();
  auto heads = std::make_shared<std::vector<std::pair<std::size_t, std::size_t>>>();
  format.read_rows = [files, heads](const std::filesystem::path& path, std::size_t first,
                                    std::size_t count) {
    heads->emplace_back(FakeFiles::shard_of(path), count);
    const stoke::ArrayShard whole = files.load(path);
    (*files.loads)[FakeFiles::shard_of(path)]--;  // only the rows are counted as read
    const auto values = whole.values<float>(first, count);
    std::vector<std::byte> bytes(values.size_bytes());
    std::memcpy(bytes.data(), values.data(), bytes.size());
    return stoke::ArrayShard(path, {stoke::DType::f32, {count, columns}}, std::move(bytes));
  };
  const stoke::ShardedArrays<float> arrays(files.paths(), format, {.io_threads = 0});
  const auto window = arrays.rows(3, 4);  // rows 3, 4 of shard 0 and 5, 6 of shard 1
  EXPECT_EQ(window.values[3 * columns], value_at(6, 0));
  EXPECT_EQ((*files.loads)[1].load(), 0) << "shard 1 was read whole";
  EXPECT_EQ(*heads, (std::vector<std::pair<std::size_t, std::size_t>>{{1, 2}}));
  EXPECT_EQ(arrays.partial_reads(), (std::pair<std::size_t, std::size_t>{2, 2 * columns * 4}));
  (void)arrays.get(6);  // shard 1 resident now: its rows come from the cache
  (void)arrays.rows(3, 4);
  EXPECT_EQ(heads->size(), 1U);
}

/// The rows of a batch of `ArrayRow<float>`: the first value of each (its row number x 10).
struct FirstValues {
  template <class Device>
  stoke::testing::ItemsBatch<Device> batch(std::vector<stoke::ArrayRow<float>> rows,
                                           const Device& device) const {
    std::vector<std::size_t> out;
    for (const auto& row : rows) out.push_back(static_cast<std::size_t>(row.values[0] / 10));
    return {std::move(out), device};
  }
};

TEST(ShardedArrays, AShardAwareLoaderReadsEachShardOncePerEpochWithinTheBound) {
  // Four resident shards: the one being read ahead, and the three that two workers' batches
  // may read at once (a batch of 8 rows spans at most two shards of at least 12 rows: batch k
  // reads the end of shard c and the start of d while batch k + 1 reads d and e). With three,
  // a shard that a batch had not yet reached could be evicted and read again.
  const FakeFiles files({40, 25, 33, 40, 12, 30});
  const stoke::ShardedArrays<float> arrays(files.paths(), files.format(),
                                           {.resident = 4, .io_threads = 1});
  auto loader = stoke::DataLoaderBuilder<stoke::cpu::Backend, FirstValues>({})
                    .batch_size(8)
                    .shuffle_shards(3)
                    .num_workers(2)
                    .build(arrays);
  for (int epoch = 0; epoch < 2; ++epoch) {
    std::vector<std::size_t> seen = stoke::testing::epoch_items(loader);
    std::sort(seen.begin(), seen.end());
    std::vector<std::size_t> all(arrays.size());
    std::iota(all.begin(), all.end(), 0);
    EXPECT_EQ(seen, all) << "epoch " << epoch;
    // At most once per epoch (a shard still resident from the epoch before is not read again).
    for (std::size_t k = 0; k < files.rows.size(); ++k) {
      EXPECT_GE((*files.loads)[k].load(), 1) << "shard " << k << ", epoch " << epoch;
      EXPECT_LE((*files.loads)[k].load(), epoch + 1) << "shard " << k << ", epoch " << epoch;
    }
  }
  const auto stats = arrays.cache_stats();
  EXPECT_LE(stats.max_resident, 4U);
  EXPECT_GE(stats.hits, 1U);
}

TEST(ShardedArrays, AShardSplitRankOfTwoDevicesReadsEachOfItsFilesOncePerEpoch) {
  // Two ranks, each a process with a cache of K = 3 shards of its own, take whole files of
  // windows (which run over file ends) and split them over two devices, which make their
  // batches in lockstep, one a step ahead of the other (as a device thread and the batches
  // queued for it are): at a file's end one device moves into the next file while the other
  // still makes a batch of the file before. Three shards are enough: the one the devices
  // leave, the one they enter, and the one read ahead. Each rank reads each of its files
  // once per epoch (with `pad`, its first file once more: the padding wraps around to it),
  // no file it does not visit, and the heads of the windows that run over a file's end at
  // most twice per epoch.
  constexpr std::size_t ranks = 2;
  constexpr std::size_t epochs = 3;
  const std::vector<std::size_t> rows{20, 26, 17, 30, 23, 28, 19, 24};
  const auto file_of = [&](std::size_t row) {  // the file of a dataset row
    std::size_t file = 0;
    while (row >= rows[file]) row -= rows[file++];
    return file;
  };
  for (const stoke::Remainder remainder : {stoke::Remainder::drop, stoke::Remainder::pad}) {
    SCOPED_TRACE(remainder == stoke::Remainder::drop ? "drop" : "pad");
    std::vector<std::size_t> seen_windows;
    for (std::size_t rank = 0; rank < ranks; ++rank) {
      const FakeFiles files(rows);
      const stoke::ShardedArrays<float> arrays(files.paths(), files.format_with_heads(),
                                               {.resident = 3, .io_threads = 1});
      const auto loader = stoke::DataLoaderBuilder<stoke::cpu::Backend, FirstValues>({})
                              .batch_size(4)
                              .shuffle_shards(7)
                              .remainder(remainder)
                              .build_batch_loader(arrays | stoke::windows(5, 1));
      auto devices =
          stoke::split(stoke::rank_share(loader, rank, ranks, stoke::RankSplit::by_shards),
                       stoke::cpu::Backend::devices(2));
      std::vector<int> before(rows.size(), 0);
      for (std::size_t epoch = 0; epoch < epochs; ++epoch) {
        std::set<std::size_t> files_read;
        std::optional<std::size_t> first_file;
        const auto train = [&](const auto& batch) {
          const std::vector<std::size_t>& first_rows = batch.data.items;
          for (std::size_t i = 0; i < first_rows.size(); ++i) {
            const bool padding = i + batch.padding >= first_rows.size();
            if (epoch == 0 && !padding) seen_windows.push_back(first_rows[i]);
            files_read.insert(file_of(first_rows[i]));
            if (!first_file) first_file = file_of(first_rows[i]);
          }
        };
        // Device 0 makes rank batches 0, 2, 4, ..., device 1 makes 1, 3, 5, ...: in the order
        // 0, 1, 3, 2, 5, 4, ... (device 1 makes each of its batches before device 0's last).
        auto behind = devices[0].iter();
        auto ahead = devices[1].iter();
        auto b = behind.begin();
        ASSERT_NE(b, behind.end());
        train(*b);
        auto a = ahead.begin();
        ASSERT_NE(a, ahead.end());
        train(*a);
        for (;;) {
          ++a;
          if (a != ahead.end()) train(*a);
          ++b;
          if (b != behind.end()) train(*b);
          ASSERT_EQ(a == ahead.end(), b == behind.end()) << "the devices' batch counts differ";
          if (a == ahead.end()) break;
        }
        for (std::size_t k = 0; k < rows.size(); ++k) {
          const int reads = (*files.loads)[k].load() - before[k];
          const int wraps = remainder == stoke::Remainder::pad && k == first_file ? 1 : 0;
          EXPECT_LE(reads, 1 + wraps) << "rank " << rank << ", epoch " << epoch << ", file " << k;
          if (reads > 0) {
            EXPECT_TRUE(files_read.contains(k))
                << "rank " << rank << " read file " << k << " of another rank in epoch " << epoch;
          }
          before[k] = (*files.loads)[k].load();
        }
      }
      std::map<std::size_t, int> head_reads;
      for (const auto& [shard, count] : *files.heads) ++head_reads[shard];
      for (const auto& [shard, reads] : head_reads) {
        EXPECT_LE(reads, 2 * static_cast<int>(epochs))
            << "rank " << rank << ": the head of file " << shard;
      }
      EXPECT_LE(arrays.cache_stats().max_resident, 3U);
    }
    // The ranks together saw every window at most once (`drop` leaves some out).
    std::sort(seen_windows.begin(), seen_windows.end());
    EXPECT_EQ(std::adjacent_find(seen_windows.begin(), seen_windows.end()), seen_windows.end());
  }
}

TEST(ShardedArrays, WindowsRunningOverAFilesEndReadTheNextFilesHeadAtMostTwice) {
  const FakeFiles files({10, 8, 12});
  const stoke::ShardedArrays<float> arrays(files.paths(), files.format_with_heads(),
                                           {.io_threads = 0});
  const auto windows = arrays | stoke::windows(5, 1);
  // Windows 6 to 9 start in file 0 and need 1 to 4 rows of file 1; in a shuffled order.
  for (const std::size_t w : {7U, 9U, 6U, 8U}) {
    const stoke::ArrayRow<float> rows = windows.get(w);
    for (std::size_t t = 0; t < 5; ++t) {
      EXPECT_EQ(rows.values[t * columns + 2], value_at(w + t, 2)) << "window " << w;
    }
  }
  EXPECT_EQ((*files.loads)[1].load(), 0) << "file 1 was read whole";
  // The rows the first window needs, then all that a window can need (4 of a window of 5).
  EXPECT_EQ(*files.heads, (std::vector<std::pair<std::size_t, std::size_t>>{{1, 2}, {1, 4}}));
}

TEST(ShardedArrays, NpyFilesWrittenBySaveNpyReadBackAcrossFileEnds) {
  stoke::testing::TempDir dir;
  const FakeFiles fake({5, 4, 6});
  for (std::size_t k = 0; k < fake.rows.size(); ++k) {
    const stoke::ArrayShard shard = fake.load("shard" + std::to_string(k));
    stoke::save_npy(dir / ("month_" + std::to_string(k) + ".npy"), shard.info(), shard.bytes());
  }
  const auto files = stoke::files_matching(dir.path(), "month_*.npy");
  const stoke::ShardedArrays<float> arrays(files, stoke::npy_format(), {.io_threads = 0});
  ASSERT_EQ(arrays.size(), 15U);
  for (std::size_t first = 0; first + 4 <= arrays.size(); ++first) {
    const auto window = arrays.rows(first, 4);
    for (std::size_t t = 0; t < 4; ++t) {
      ASSERT_EQ(window.values[t * columns + 2], value_at(first + t, 2)) << first << " " << t;
    }
  }
  EXPECT_GT(arrays.partial_reads().first, 0U) << "window heads were read row by row";
  EXPECT_THAT(
      [&] { (void)stoke::load_npy_rows(files[0], 3, 3); },
      ::testing::ThrowsMessage<stoke::InputError>(HasSubstr("has 5 rows, not rows [3, 6)")));
}

TEST(ShardedArrays, FilesMatchingListsAPatternSortedAndRefusesNoMatch) {
  stoke::testing::TempDir dir;
  for (const char* name : {"b_02.npy", "a_01.npy", "notes.txt", "c_03.npy"}) {
    std::ofstream(dir / name) << "x";
  }
  const auto files = stoke::files_matching(dir.path(), "*.npy");
  ASSERT_EQ(files.size(), 3U);
  EXPECT_EQ(files[0].filename(), "a_01.npy");
  EXPECT_EQ(files[2].filename(), "c_03.npy");
  EXPECT_THAT([&] { (void)stoke::files_matching(dir.path(), "*.h5"); },
              ::testing::ThrowsMessage<stoke::InputError>(HasSubstr("matches '*.h5'")));
}

}  // namespace

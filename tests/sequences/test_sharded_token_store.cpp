// Many token stores as one dataset: ShardedTokenStore over prefixes or a directory, its global
// sequence numbers (found by binary search over the stores), lengths per store, its .bin files
// mapped through the shard cache, and the refusal of stores of mixed token types.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <type_traits>
#include <vector>

#include <stoke/core/error.hpp>
#include <stoke/data/dataset.hpp>
#include <stoke/data/sharded_order.hpp>
#include <stoke/sequences/sharded_token_store.hpp>
#include <stoke/sequences/token_store.hpp>

#include "stoke_test_files.hpp"
#include "token_store_files.hpp"

namespace {

using stoke::testing::Corpus;
using stoke::testing::message_of;
using stoke::testing::random_corpus;
using stoke::testing::TempDir;
using stoke::testing::write_corpus;
using ::testing::HasSubstr;

static_assert(stoke::Dataset<stoke::ShardedTokenStore<std::uint16_t>>);
static_assert(stoke::ShardedDataset<stoke::ShardedTokenStore<std::uint16_t>>);
static_assert(stoke::ReadAheadShardedDataset<stoke::ShardedTokenStore<std::uint16_t>>);
static_assert(std::is_same_v<stoke::dataset_item_t<stoke::ShardedTokenStore<std::int32_t>>,
                             stoke::ArrayRow<std::int32_t>>);

/// Stores `shard<k>` in `dir` from `seeds` (seed 0 gives an empty store); their sequences
/// end to end.
std::vector<std::vector<std::uint16_t>> write_shards(const TempDir& dir,
                                                     const std::vector<std::uint64_t>& seeds) {
  std::vector<std::vector<std::uint16_t>> all;
  for (std::size_t k = 0; k < seeds.size(); ++k) {
    const auto corpus =
        seeds[k] == 0 ? Corpus<std::uint16_t>{} : random_corpus<std::uint16_t>(seeds[k], 30, 100);
    write_corpus(dir / ("shard" + std::to_string(k)), corpus);
    all.insert(all.end(), corpus.sequences.begin(), corpus.sequences.end());
  }
  return all;
}

/// Expects `store` to hold `sequences` in order, and each item to keep its mapping alive.
void expect_sharded_holds(const stoke::ShardedTokenStore<std::uint16_t>& store,
                          const std::vector<std::vector<std::uint16_t>>& sequences) {
  ASSERT_EQ(store.size(), sequences.size());
  for (std::size_t i = 0; i < store.size(); ++i) {
    const stoke::ArrayRow<std::uint16_t> row = store.get(i);
    ASSERT_EQ(std::vector<std::uint16_t>(row.values.begin(), row.values.end()), sequences[i])
        << "sequence " << i;
    ASSERT_TRUE(row.owner != nullptr);
    const auto [k, within] = store.locate(i);
    ASSERT_EQ(store.shard_begins()[k] + within, i);
    ASSERT_EQ(store.lengths(k)[within], static_cast<std::int32_t>(sequences[i].size()));
  }
}

TEST(ShardedTokenStore, ReadsTheSequencesOfEveryStoreEndToEndForManyRandomSets) {
  for (std::uint64_t seed = 1; seed <= 12; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    const TempDir dir;
    std::vector<std::uint64_t> seeds;
    for (std::uint64_t k = 0; k < 1 + seed % 5; ++k)
      seeds.push_back(k == seed % 3 ? 0 : seed * 10 + k);
    const auto sequences = write_shards(dir, seeds);
    std::vector<std::filesystem::path> prefixes;
    for (std::size_t k = 0; k < seeds.size(); ++k)
      prefixes.push_back(dir / ("shard" + std::to_string(k)));
    const stoke::ShardedTokenStore<std::uint16_t> store(prefixes, {.resident = 2});
    EXPECT_EQ(store.shard_count(), seeds.size());
    expect_sharded_holds(store, sequences);
    EXPECT_LE(store.cache_stats().max_resident, 2U);
  }
}

TEST(ShardedTokenStore, OpensEveryStoreOfADirectoryInNameOrder) {
  const TempDir dir;
  const auto sequences = write_shards(dir, {5, 6, 7});
  const stoke::ShardedTokenStore<std::uint16_t> store(dir.path());
  EXPECT_EQ(store.prefixes(),
            (std::vector<std::filesystem::path>{dir / "shard0", dir / "shard1", dir / "shard2"}));
  expect_sharded_holds(store, sequences);
}

TEST(ShardedTokenStore, AnItemKeepsItsBinMappedAfterTheCacheEvictsIt) {
  const TempDir dir;
  const auto sequences = write_shards(dir, {21, 22});
  const stoke::ShardedTokenStore<std::uint16_t> store(dir.path(), {.resident = 1, .io_threads = 0});
  std::size_t first = 0;
  while (first < sequences.size() && sequences[first].empty()) ++first;
  ASSERT_LT(first, store.shard_begins()[1]);
  const auto kept = store.get(first);
  (void)store.get(store.size() - 1);  // maps the other store, evicting the first
  EXPECT_EQ(store.cache_stats().evictions, 1U);
  EXPECT_EQ(std::vector<std::uint16_t>(kept.values.begin(), kept.values.end()), sequences[first]);
}

TEST(ShardedTokenStore, RefusesStoresOfAnotherTokenTypeNamingTheFile) {
  const TempDir dir;
  write_shards(dir, {1});
  write_corpus(dir / "shard1", random_corpus<std::int32_t>(2));
  const std::string message = message_of<stoke::InputError>(
      [&] { stoke::ShardedTokenStore<std::uint16_t> store(dir.path()); });
  EXPECT_THAT(message, HasSubstr((dir / "shard1.idx").string()));
  EXPECT_THAT(message, HasSubstr("at byte offset 17: its tokens are int32, not the uint16"));
}

TEST(ShardedTokenStore, RefusesADirectoryWithoutStoresAndAnEmptyList) {
  const TempDir dir;
  EXPECT_THAT(message_of<stoke::InputError>(
                  [&] { stoke::ShardedTokenStore<std::uint16_t> store(dir.path()); }),
              HasSubstr("no file in '" + dir.path().string() + "' matches '*.idx'"));
  EXPECT_THROW(stoke::ShardedTokenStore<std::uint16_t>(std::vector<std::filesystem::path>{}),
               stoke::UsageError);
}

}  // namespace

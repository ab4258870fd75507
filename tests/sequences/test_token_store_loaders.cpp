// Token stores in stoke's loaders: a TokenStore and a ShardedTokenStore are datasets that the
// multithread loader batches like any other, every sequence once per epoch; the sharded one,
// under a shard-aware order, maps each .bin file once per epoch through its cache.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <numeric>
#include <span>
#include <string>
#include <vector>

#include <stoke/stoke.hpp>

#include "stoke_test_files.hpp"
#include "stoke_test_support.hpp"

namespace {

using stoke::testing::TempDir;

/// Stores `store<k>` in `dir` of `counts[k]` sequences, sequence `i` (counted over all stores)
/// holding the tokens `i, i, ...` (1 to 5 of them); their prefixes.
std::vector<std::filesystem::path> numbered_stores(const TempDir& dir,
                                                   const std::vector<std::size_t>& counts) {
  std::vector<std::filesystem::path> prefixes;
  std::uint16_t next = 0;
  for (std::size_t k = 0; k < counts.size(); ++k) {
    prefixes.push_back(dir / ("store" + std::to_string(k)));
    stoke::TokenStoreWriter<std::uint16_t> writer(prefixes.back());
    for (std::size_t s = 0; s < counts[k]; ++s, ++next) {
      writer.add_document(std::vector<std::uint16_t>(1 + next % 5, next));
    }
    writer.finish();
  }
  return prefixes;
}

/// The sequence numbers of a batch: each sequence's first token.
struct SequenceNumbers {
  template <class Device>
  stoke::testing::ItemsBatch<Device> batch(std::vector<std::span<const std::uint16_t>> sequences,
                                           const Device& device) const {
    std::vector<std::size_t> out;
    for (const auto& tokens : sequences) out.push_back(tokens.front());
    return {std::move(out), device};
  }
  template <class Device>
  stoke::testing::ItemsBatch<Device> batch(std::vector<stoke::ArrayRow<std::uint16_t>> rows,
                                           const Device& device) const {
    std::vector<std::size_t> out;
    for (const auto& row : rows) out.push_back(row.values.front());
    return {std::move(out), device};
  }
};

/// Expects `loader`'s next epochs to give each of `size` sequences once.
template <class Loader>
void expect_every_sequence_once(Loader& loader, std::size_t size, int epochs) {
  std::vector<std::size_t> all(size);
  std::iota(all.begin(), all.end(), 0);
  for (int epoch = 0; epoch < epochs; ++epoch) {
    std::vector<std::size_t> seen = stoke::testing::epoch_items(loader);
    std::sort(seen.begin(), seen.end());
    EXPECT_EQ(seen, all) << "epoch " << epoch;
  }
}

TEST(TokenStoreLoaders, AMultithreadLoaderGivesEverySequenceOfAStoreOncePerEpoch) {
  const TempDir dir;
  const auto prefixes = numbered_stores(dir, {37});
  const stoke::TokenStore<std::uint16_t> store(prefixes.front());
  auto loader = stoke::DataLoaderBuilder<stoke::cpu::Backend, SequenceNumbers>({})
                    .batch_size(4)
                    .shuffle(5)
                    .num_workers(2)
                    .build(store);
  expect_every_sequence_once(loader, store.size(), 2);
}

TEST(TokenStoreLoaders, AShardAwareLoaderMapsEachBinOncePerEpoch) {
  const TempDir dir;
  const auto prefixes = numbered_stores(dir, {30, 21, 40, 26});
  const stoke::ShardedTokenStore<std::uint16_t> store(prefixes, {.resident = 4});
  auto loader = stoke::DataLoaderBuilder<stoke::cpu::Backend, SequenceNumbers>({})
                    .batch_size(6)
                    .shuffle_shards(3)
                    .num_workers(2)
                    .build(store);
  for (int epoch = 1; epoch <= 2; ++epoch) {
    expect_every_sequence_once(loader, store.size(), 1);
    const auto loads = store.cache_stats().shard_loads;
    for (std::size_t k = 0; k < loads.size(); ++k) {
      EXPECT_GE(loads[k], 1U) << "store " << k;
      EXPECT_LE(loads[k], static_cast<std::size_t>(epoch)) << "store " << k << ", epoch " << epoch;
    }
  }
}

}  // namespace

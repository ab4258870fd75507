// Per-sample randomness: keyed by (seed, epoch, index), independent of workers and devices.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <set>
#include <span>
#include <vector>

#include <stoke/stoke.hpp>

#include "stoke_test_support.hpp"

namespace {

using stoke::cpu::Backend;

/// Each sample is its index and a random draw from its own stream, read inside `get`.
struct AugmentedDataset {
  std::size_t count = 0;
  [[nodiscard]] std::size_t size() const { return count; }
  [[nodiscard]] std::pair<std::size_t, std::uint32_t> get(std::size_t index) const {
    return {index, stoke::sample_rng()()};
  }
};

/// The batch is (index, draw in get, draw in batch) for every item.
struct AugmentingBatcher {
  struct Item {
    std::size_t index;
    std::uint32_t in_get, in_batch;
  };
  std::vector<Item> batch(std::vector<std::pair<std::size_t, std::uint32_t>> items,
                          const stoke::cpu::Device&) const {
    std::vector<Item> out;
    for (std::size_t k = 0; k < items.size(); ++k) {
      auto rng = stoke::sample_rng(k);
      rng();  // skip the draw `get` took: the batcher continues the same stream
      out.push_back({items[k].first, items[k].second, rng()});
    }
    return out;
  }
};

using Draws = std::map<std::size_t, std::pair<std::uint32_t, std::uint32_t>>;

template <class Loader>
Draws draws(Loader& loader) {
  Draws out;
  for (auto& batch : loader.iter()) {
    for (const auto& item : batch.data) out[item.index] = {item.in_get, item.in_batch};
  }
  return out;
}

auto augmenting_builder() {
  return stoke::DataLoaderBuilder<Backend, AugmentingBatcher>({}).batch_size(5).shuffle(99).pad();
}

TEST(SampleRandomness, DrawsAreKeyedBySeedEpochAndIndex) {
  auto loader = augmenting_builder().build_batch_loader(AugmentedDataset{50});
  const Draws epoch0 = draws(loader);
  ASSERT_EQ(epoch0.size(), 50u);
  for (const auto& [index, draw] : epoch0) {
    EXPECT_EQ(draw.first, stoke::SampleRng(99, 0, index)()) << index;
  }
}

TEST(SampleRandomness, IsIndependentOfWorkersAndDevices) {
  auto single = augmenting_builder().build_batch_loader(AugmentedDataset{60});
  const Draws expected = draws(single);
  for (std::size_t workers : {1u, 3u}) {
    for (std::size_t devices : {1u, 2u, 4u}) {
      auto loader = augmenting_builder().num_workers(workers).build(AugmentedDataset{60});
      Draws merged;
      for (auto& part : stoke::split(loader, Backend::devices(devices))) merged.merge(draws(part));
      EXPECT_EQ(merged, expected) << workers << " workers, " << devices << " devices";
    }
  }
}

TEST(SampleRandomness, DiffersBetweenSamplesAndEpochs) {
  auto loader = augmenting_builder().build_batch_loader(AugmentedDataset{100});
  const Draws epoch0 = draws(loader);
  const Draws epoch1 = draws(loader);
  std::set<std::uint32_t> distinct;
  std::size_t same_as_last_epoch = 0;
  for (const auto& [index, draw] : epoch0) {
    distinct.insert(draw.first);
    same_as_last_epoch += draw.first == epoch1.at(index).first;
    EXPECT_NE(draw.first, draw.second);  // the batcher continued the stream
  }
  EXPECT_EQ(distinct.size(), 100u);
  EXPECT_EQ(same_as_last_epoch, 0u);
}

/// The same samples, read in bulk: `get_many` reads each item through `get`, in the item's
/// `SampleItemScope`, so `get`'s `sample_rng()` is that item's stream.
struct BulkAugmentedDataset : AugmentedDataset {
  void get_many(std::span<const std::size_t> indices,
                std::vector<std::pair<std::size_t, std::uint32_t>>& out) const {
    for (std::size_t k = 0; k < indices.size(); ++k) {
      const stoke::SampleItemScope item(k);
      out.push_back(get(indices[k]));
    }
  }
};

TEST(SampleRandomness, GetManyGivesEachItemItsOwnStream) {
  auto one_by_one = augmenting_builder().build_batch_loader(AugmentedDataset{40});
  auto bulk = augmenting_builder().num_workers(2).build(BulkAugmentedDataset{{40}});
  EXPECT_EQ(draws(bulk), draws(one_by_one));
}

/// `get_many` drawing `sample_rng()` without naming an item.
struct UnscopedBulkDataset : AugmentedDataset {
  void get_many(std::span<const std::size_t> indices,
                std::vector<std::pair<std::size_t, std::uint32_t>>& out) const {
    for (const std::size_t index : indices) out.push_back(get(index));
  }
};

TEST(SampleRandomness, AnItemlessDrawInGetManySaysHowToNameTheItem) {
  auto loader = augmenting_builder().build_batch_loader(UnscopedBulkDataset{{10}});
  try {
    (void)draws(loader);
    FAIL() << "expected a DataError";
  } catch (const stoke::DataError& error) {
    try {
      std::rethrow_if_nested(error);
      FAIL() << "expected a nested error";
    } catch (const stoke::Error& nested) {
      EXPECT_THAT(nested.what(), ::testing::HasSubstr("use sample_rng(k) for item k"));
    }
  }
}

TEST(SampleRandomness, OutsideALoaderIsAnError) {
  EXPECT_THROW((void)stoke::SampleItemScope(0), stoke::UsageError);
  EXPECT_THROW((void)stoke::sample_rng(), stoke::Error);
  EXPECT_THROW((void)stoke::sample_rng(0), stoke::Error);
  EXPECT_EQ(stoke::current_sample_context(), nullptr);
}

}  // namespace

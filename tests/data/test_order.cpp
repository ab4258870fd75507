// Epoch order: a keyed bijection, a pure function of (seed, epoch), O(1) per position.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <numeric>
#include <set>
#include <vector>

#include <stoke/data/order.hpp>

namespace {

std::vector<std::size_t> materialise(const stoke::EpochOrder& order) {
  std::vector<std::size_t> out(order.size());
  for (std::size_t p = 0; p < order.size(); ++p) out[p] = order(p);
  return out;
}

bool is_permutation_of_iota(std::vector<std::size_t> values) {
  std::sort(values.begin(), values.end());
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (values[i] != i) return false;
  }
  return true;
}

TEST(EpochOrder, IsABijectionForEverySizeUpTo300) {
  for (std::size_t size = 0; size <= 300; ++size) {
    ASSERT_TRUE(is_permutation_of_iota(materialise(stoke::EpochOrder(size, 42, size))))
        << "size " << size;
  }
}

TEST(EpochOrder, IsABijectionForSizesAroundPowersOfTwo) {
  for (std::size_t size : {1023u, 1024u, 1025u, 4095u, 4096u, 4097u, 65537u}) {
    ASSERT_TRUE(is_permutation_of_iota(materialise(stoke::EpochOrder(size, 9, 1))))
        << "size " << size;
  }
}

TEST(EpochOrder, MapsManyPositionsAsOneAtATime) {
  for (std::size_t size : {0u, 1u, 2u, 7u, 8u, 9u, 300u, 1025u, 4097u, 65537u, 1000000u}) {
    for (const bool shuffle : {false, true}) {
      const auto order = shuffle ? stoke::EpochOrder(size, 5, 2) : stoke::EpochOrder(size);
      std::vector<std::size_t> positions(std::min<std::size_t>(size, 5000));
      std::iota(positions.begin(), positions.end(), size - positions.size());
      std::vector<std::size_t> expected(positions.size());
      for (std::size_t i = 0; i < positions.size(); ++i) expected[i] = order(positions[i]);
      order.map(positions);
      ASSERT_EQ(positions, expected) << "size " << size << ", shuffle " << shuffle;
    }
  }
}

TEST(EpochOrder, WithoutShuffleIsTheIdentity) {
  const stoke::EpochOrder order(100);
  EXPECT_FALSE(order.shuffled());
  for (std::size_t p = 0; p < 100; ++p) ASSERT_EQ(order(p), p);
}

TEST(EpochOrder, IsAPureFunctionOfSeedAndEpoch) {
  EXPECT_EQ(materialise(stoke::EpochOrder(1000, 3, 5)), materialise(stoke::EpochOrder(1000, 3, 5)));
}

TEST(EpochOrder, DiffersBetweenEpochsAndSeeds) {
  const auto base = materialise(stoke::EpochOrder(1000, 3, 5));
  EXPECT_NE(base, materialise(stoke::EpochOrder(1000, 3, 6)));
  EXPECT_NE(base, materialise(stoke::EpochOrder(1000, 4, 5)));
  std::vector<std::size_t> identity(1000);
  std::iota(identity.begin(), identity.end(), 0);
  EXPECT_NE(base, identity);
}

TEST(EpochOrder, SpreadsPositionZeroEvenlyOverEpochs) {
  // Over 20000 epochs the index at position 0 should be close to uniform over 10 samples.
  std::vector<int> counts(10);
  for (std::size_t epoch = 0; epoch < 20000; ++epoch) ++counts[stoke::EpochOrder(10, 1, epoch)(0)];
  for (const int count : counts) EXPECT_NEAR(count, 2000, 250);
}

TEST(EpochOrder, HandlesABillionPositionsWithoutMaterialising) {
  const std::size_t size = 1'000'000'000;
  const stoke::EpochOrder order(size, 77, 2);
  std::set<std::size_t> seen;
  for (std::size_t p = 0; p < 100000; ++p) {
    const std::size_t index = order(p * 9973 % size);
    ASSERT_LT(index, size);
    seen.insert(index);
  }
  EXPECT_EQ(seen.size(), 100000u);  // distinct positions give distinct indices
  EXPECT_LE(sizeof(order), 128u);   // O(1) memory: the order is a few keys
}

}  // namespace

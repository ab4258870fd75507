// PadBatcher: pads a batch of token sequences to its longest (or a multiple of N) with a mask
// from the lengths, never from token values; it is a stoke Batcher, so today's loaders pad.
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include <stoke/stoke.hpp>

#include "token_corpus.hpp"

namespace {

using stoke::testing::random_lengths;
using stoke::testing::TokenCorpus;

TEST(PadBatcher, PadsToTheLongestWithAMaskFromTheLengths) {
  const std::vector<std::vector<std::int32_t>> items{{5, 6, 7}, {8}, {}};
  const auto batch = stoke::PadBatcher{.pad_id = -1}.batch(items, stoke::HostDevice{});
  EXPECT_EQ(batch.rows, 3u);
  EXPECT_EQ(batch.width, 3u);
  EXPECT_EQ(batch.tokens, (std::vector<std::int32_t>{5, 6, 7, 8, -1, -1, -1, -1, -1}));
  EXPECT_EQ(batch.mask, (std::vector<std::uint8_t>{1, 1, 1, 1, 0, 0, 0, 0, 0}));
  EXPECT_EQ(batch.lengths, (std::vector<std::int32_t>{3, 1, 0}));
}

TEST(PadBatcher, ARealTokenEqualToThePadIdIsNotMasked) {
  const std::vector<std::vector<std::int32_t>> items{{0, 0}, {0}};
  const auto batch = stoke::PadBatcher{.pad_id = 0}.batch(items, stoke::HostDevice{});
  EXPECT_EQ(batch.tokens, (std::vector<std::int32_t>{0, 0, 0, 0}));
  EXPECT_EQ(batch.mask, (std::vector<std::uint8_t>{1, 1, 1, 0}));
}

TEST(PadBatcher, RoundsTheWidthUpToAMultiple) {
  const std::vector<std::vector<std::int32_t>> items{{1, 2, 3, 4, 5}, {6}};
  const auto batch = stoke::PadBatcher{.pad_id = 9, .multiple = 4}.batch(items, 0);
  EXPECT_EQ(batch.width, 8u);
  EXPECT_EQ(batch.tokens.size(), 16u);
  EXPECT_EQ(batch.mask[5], 0u);
  EXPECT_EQ(batch.mask[4], 1u);
}

TEST(PadBatcher, BatchesEveryDocumentOfAnEpochThroughAMultithreadLoader) {
  const TokenCorpus corpus(random_lengths(103, 40, 21));
  auto loader = stoke::DataLoaderBuilder<stoke::cpu::Backend, stoke::PadBatcher>(
                    stoke::PadBatcher{.pad_id = -7, .multiple = 8})
                    .batch_size(8)
                    .shuffle(3)
                    .num_workers(2)
                    .build(corpus);
  std::vector<int> seen(corpus.size(), 0);
  for (auto& batch : loader.iter()) {
    const auto& padded = batch.data;
    EXPECT_EQ(padded.width % 8, 0u);
    for (std::size_t r = 0; r < padded.rows; ++r) {
      const std::size_t document = batch.indices[r];
      ++seen[document];
      const auto tokens = corpus.get(document);
      ASSERT_EQ(padded.lengths[r], static_cast<std::int32_t>(tokens.size()));
      for (std::size_t t = 0; t < padded.width; ++t) {
        const bool real = t < tokens.size();
        EXPECT_EQ(padded.mask[r * padded.width + t], real ? 1 : 0);
        EXPECT_EQ(padded.tokens[r * padded.width + t], real ? tokens[t] : -7);
      }
    }
  }
  EXPECT_EQ(seen, std::vector<int>(corpus.size(), 1));
}

}  // namespace

// Bucketing under a token budget: every document once per epoch, no batch over the budget
// (padding counted, or the attention cost), lengths grouped, boundaries from the data.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <stoke/stoke.hpp>

#include "token_corpus.hpp"

namespace {

using stoke::testing::packed_disagreement;
using stoke::testing::random_lengths;
using stoke::testing::TokenCorpus;
using stoke::testing::TokenUses;
using stoke::testing::whole_plan;

TEST(BucketPlanner, EveryDocumentOnceAndNoBatchOverTheBudget) {
  for (std::uint64_t seed = 0; seed < 30; ++seed) {
    const TokenCorpus corpus(random_lengths(40 + seed * 17, 64, seed + 300));
    const auto cost = seed % 3 == 0 ? stoke::BucketCost::attention : stoke::BucketCost::tokens;
    const std::size_t budget = cost == stoke::BucketCost::tokens ? 64 + seed * 9 : 64 * 64 * 3;
    const stoke::BucketOptions options{
        .budget = budget,
        .cost = cost,
        .pad_multiple = 1 + seed % 4,
        .boundaries = stoke::estimate_bucket_boundaries(corpus.lengths(), 1 + seed % 5),
        .window_documents = 1 + seed % 7 * 11,
        .shuffle = seed % 2 == 0,
        .seed = seed};
    const stoke::BucketPlanner planner(corpus.lengths(), options);
    TokenUses uses(corpus.lengths());
    for (const auto& batch : whole_plan(planner, seed % 2)) {
      const std::size_t spent = cost == stoke::BucketCost::tokens
                                    ? batch.slots()
                                    : batch.rows.size() * batch.width * batch.width;
      EXPECT_LE(spent, budget) << "seed " << seed;
      EXPECT_EQ(batch.width % options.pad_multiple, 0u);
      std::size_t longest = 0;
      for (const auto& row : batch.rows) {
        ASSERT_EQ(row.pieces.size(), 1u);
        longest = std::max(longest, row.tokens());
      }
      EXPECT_EQ(batch.width, stoke::round_up_to_multiple(longest, options.pad_multiple));
      uses.add(batch);
      const auto packed = stoke::make_packed_batch(batch, corpus, 0);
      ASSERT_EQ(packed_disagreement(packed, batch, 0), "") << "seed " << seed;
    }
    EXPECT_EQ(uses.first_not_once(), "") << "seed " << seed;
  }
}

TEST(BucketPlanner, BatchesHoldOneBucketEach) {
  const TokenCorpus corpus(random_lengths(400, 100, 4));
  const std::vector<std::size_t> boundaries{10, 30, 60};
  const stoke::BucketPlanner planner(corpus.lengths(),
                                     {.budget = 400, .boundaries = boundaries, .seed = 2});
  const auto bucket_of = [&](std::size_t length) {
    return std::lower_bound(boundaries.begin(), boundaries.end(), length) - boundaries.begin();
  };
  for (const auto& batch : whole_plan(planner, 0)) {
    const auto first = bucket_of(batch.rows.front().tokens());
    for (const auto& row : batch.rows) EXPECT_EQ(bucket_of(row.tokens()), first);
  }
}

TEST(BucketPlanner, PadsLessThanPaddingShuffledBatchesOfTheSameRows) {
  const TokenCorpus corpus(random_lengths(2000, 200, 12));
  const stoke::BucketPlanner planner(
      corpus.lengths(), {.budget = 2048,
                         .boundaries = stoke::estimate_bucket_boundaries(corpus.lengths(), 8),
                         .seed = 5});
  std::size_t slots = 0;
  std::size_t tokens = 0;
  for (const auto& batch : whole_plan(planner, 0)) {
    slots += batch.slots();
    tokens += batch.tokens();
  }
  // Padding each shuffled run of 16 documents to its longest wastes far more.
  const auto order = stoke::EpochOrder(corpus.size(), 5, 0);
  std::size_t shuffled_slots = 0;
  for (std::size_t first = 0; first < corpus.size(); first += 16) {
    std::size_t longest = 0;
    const std::size_t end = std::min(corpus.size(), first + 16);
    for (std::size_t p = first; p < end; ++p) {
      longest = std::max<std::size_t>(longest, corpus.lengths()[order(p)]);
    }
    shuffled_slots += longest * (end - first);
  }
  EXPECT_LT(
      static_cast<double>(slots - tokens) / static_cast<double>(slots),
      0.5 * static_cast<double>(shuffled_slots - tokens) / static_cast<double>(shuffled_slots));
}

TEST(BucketPlanner, RefusesADocumentOverTheBudgetNamingIt) {
  const std::vector<std::int32_t> lengths{4, 50, 4};
  const stoke::BucketPlanner planner(lengths, {.budget = 32, .shuffle = false});
  try {
    (void)planner.plan_window(0, {});
    FAIL() << "a document over the budget was batched";
  } catch (const stoke::InputError& error) {
    EXPECT_NE(std::string(error.what()).find("document 1 of 50 tokens"), std::string::npos)
        << error.what();
  }
}

TEST(EstimateBucketBoundaries, SplitsTheLengthsIntoGroupsOfAboutEqualCounts) {
  std::vector<std::int32_t> lengths;
  for (std::int32_t i = 1; i <= 1000; ++i) lengths.push_back(i);
  const auto boundaries = stoke::estimate_bucket_boundaries(lengths, 4);
  ASSERT_EQ(boundaries.size(), 3u);
  EXPECT_NEAR(static_cast<double>(boundaries[0]), 250.0, 2.0);
  EXPECT_NEAR(static_cast<double>(boundaries[1]), 500.0, 2.0);
  EXPECT_NEAR(static_cast<double>(boundaries[2]), 750.0, 2.0);
  const std::vector<std::int32_t> same(100, 7);
  EXPECT_EQ(stoke::estimate_bucket_boundaries(same, 4), (std::vector<std::size_t>{7}));
}

}  // namespace

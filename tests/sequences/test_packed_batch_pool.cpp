// A packed batch's storage (#37): its five tensors in one block of a BufferPool, recycled once
// the batch is dropped, and every slot written anew (a recycled block holds the last batch's
// values, never zeroed: a slot left unwritten would show them).
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include <stoke/stoke.hpp>

#include "token_corpus.hpp"

namespace {

using stoke::testing::TokenCorpus;

/// Every batch of one epoch of a first-fit plan over `corpus`.
std::vector<stoke::PlannedBatch> fit_batches(const TokenCorpus& corpus) {
  const stoke::FitPlanner planner(
      corpus.lengths(),
      {.sequence_length = 48, .rows_per_batch = 4, .window_documents = 16, .seed = 5});
  return stoke::testing::whole_plan(planner, 0);
}

TEST(PackedBatchPool, ARecycledBlockIsWrittenWholeAndNoneIsAllocatedOnceRunning) {
  const TokenCorpus corpus(stoke::testing::random_lengths(200, 60, 11));
  const std::vector<stoke::PlannedBatch> plans = fit_batches(corpus);
  ASSERT_GT(plans.size(), 10u);
  const stoke::BufferPool pool(2);
  for (std::size_t k = 0; k < plans.size(); ++k) {
    // Fresh memory each time (a pool that keeps nothing) is the reference.
    const stoke::PackedBatch fresh = stoke::make_packed_batch(plans[k], corpus, -1);
    const stoke::PackedBatch pooled = stoke::make_packed_batch(plans[k], corpus, -1, pool);
    EXPECT_EQ(pooled.tokens, fresh.tokens) << "batch " << k;
    EXPECT_EQ(pooled.segment_ids, fresh.segment_ids) << "batch " << k;
    EXPECT_EQ(pooled.positions, fresh.positions) << "batch " << k;
    EXPECT_EQ(pooled.cu_seqlens, fresh.cu_seqlens) << "batch " << k;
    EXPECT_EQ(pooled.loss_mask, fresh.loss_mask) << "batch " << k;
    EXPECT_EQ(stoke::testing::packed_disagreement(pooled, plans[k], -1), "") << "batch " << k;
  }
  // Batches of a first-fit plan differ in size, within twice the smallest: a few blocks serve.
  EXPECT_LE(pool.allocations(), 3u);
}

TEST(PackedBatchPool, CopiesShareTheBlockWhichReturnsWhenTheLastIsDropped) {
  const TokenCorpus corpus(stoke::testing::random_lengths(40, 30, 3));
  const std::vector<stoke::PlannedBatch> plans = fit_batches(corpus);
  const stoke::BufferPool pool(4);
  std::optional<stoke::PackedBatch> copy;
  {
    const stoke::PackedBatch batch = stoke::make_packed_batch(plans.front(), corpus, -1, pool);
    copy = batch;
    EXPECT_EQ(copy->tokens.data(), batch.tokens.data());
  }
  EXPECT_EQ(pool.free_buffers(), 0u);  // the copy holds it
  EXPECT_EQ(stoke::testing::packed_disagreement(*copy, plans.front(), -1), "");
  copy.reset();
  EXPECT_EQ(pool.free_buffers(), 1u);
}

}  // namespace

// A plan is computed one plan window at a time: the first batch of a corpus of billions of
// tokens reads the lengths of its first windows only, and a resume deep into the epoch reads
// about as many, however far in it is.
#include <gtest/gtest.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>

#include <stoke/stoke.hpp>

namespace {

/// Lengths of `count` documents drawn from their index, counting how many were read.
struct CountedLengths {
  std::shared_ptr<std::atomic<std::size_t>> reads = std::make_shared<std::atomic<std::size_t>>(0);
  stoke::DocumentLengths lengths(std::size_t count) const {
    return stoke::DocumentLengths(count, [reads = reads](std::size_t i) {
      reads->fetch_add(1, std::memory_order_relaxed);
      return static_cast<std::size_t>(1 + stoke::mix64(i + 17) % 100);
    });
  }
};

constexpr std::size_t billions_of_tokens = 200'000'000;  // documents of 50 tokens on average

TEST(SequencePlanLazy, TheFirstBatchOfAHugeCorpusReadsItsFirstWindowsOnly) {
  const CountedLengths counted;
  const stoke::ConcatPlanner concat(
      counted.lengths(billions_of_tokens),
      {.sequence_length = 2048, .rows_per_batch = 8, .window_batches = 4, .seed = 1});
  const stoke::FitPlanner fit(counted.lengths(billions_of_tokens),
                              {.sequence_length = 2048, .rows_per_batch = 8, .seed = 1});
  const stoke::BucketPlanner bucket(counted.lengths(billions_of_tokens),
                                    {.budget = 4096, .seed = 1});
  counted.reads->store(0);
  stoke::PlanShare<stoke::ConcatPlanner> concat_share(concat, 8, 7, stoke::Remainder::pad);
  ASSERT_TRUE(concat_share.next());
  stoke::PlanShare<stoke::FitPlanner> fit_share(fit, 8, 7, stoke::Remainder::pad);
  ASSERT_TRUE(fit_share.next());
  stoke::PlanShare<stoke::BucketPlanner> bucket_share(bucket, 8, 7, stoke::Remainder::pad);
  ASSERT_TRUE(bucket_share.next());
  // Three fingerprints (a sample of 4096 lengths each) and a few windows of each plan.
  EXPECT_LT(counted.reads->load(), 3u * 4096u + 3u * 3u * 4096u);
}

TEST(SequencePlanLazy, AResumeDeepIntoTheEpochPlansFromItsWindow) {
  const CountedLengths counted;
  const stoke::FitPlanner planner(counted.lengths(billions_of_tokens),
                                  {.sequence_length = 512,
                                   .rows_per_batch = 4,
                                   .window_documents = 256,
                                   .seed = 3,
                                   .fit = stoke::PackFit::best});
  stoke::PlanShare<stoke::FitPlanner> share(planner, 2, 0, stoke::Remainder::pad);
  for (int s = 0; s < 3000; ++s) ASSERT_TRUE(share.next());
  const stoke::SequencePlanState state = share.state();
  ASSERT_GT(state.cursor.start.window, 500u);
  counted.reads->store(0);
  stoke::PlanShare<stoke::FitPlanner> resumed(planner, 3, 2, stoke::Remainder::pad, state);
  const auto batch = resumed.next();
  ASSERT_TRUE(batch);
  EXPECT_EQ(batch->epoch_batch, state.consumed + 2);
  EXPECT_LT(counted.reads->load(), 4096u + 3u * 256u);  // the fingerprint and a window or two
}

}  // namespace

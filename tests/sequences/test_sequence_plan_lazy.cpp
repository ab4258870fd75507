// A plan is computed one plan window at a time: the first batch of a corpus of billions of
// tokens reads the lengths of its first windows only, and a resume deep into the epoch reads
// about as many, however far in it is.
#include <gtest/gtest.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>

#include <stoke/stoke.hpp>

#include "token_corpus.hpp"

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

/// A `ConcatPlanner` that counts the windows it plans (and skips them as the planner does).
struct CountingConcat {
  stoke::ConcatPlanner planner;
  std::shared_ptr<std::atomic<std::size_t>> planned = std::make_shared<std::atomic<std::size_t>>(0);

  [[nodiscard]] stoke::WindowPlan plan_window(std::size_t epoch,
                                              const stoke::WindowStart& start) const {
    planned->fetch_add(1, std::memory_order_relaxed);
    return planner.plan_window(epoch, start);
  }
  [[nodiscard]] stoke::WindowSkip skip_window(std::size_t epoch,
                                              const stoke::WindowStart& start) const {
    return planner.skip_window(epoch, start);
  }
  [[nodiscard]] std::size_t epoch_batches(std::size_t epoch) const {
    return planner.epoch_batches(epoch);
  }
  [[nodiscard]] std::uint64_t fingerprint() const noexcept { return planner.fingerprint(); }
};
static_assert(stoke::SkippingPlanner<stoke::ConcatPlanner>);
static_assert(stoke::SkippingPlanner<CountingConcat>);

TEST(SequencePlanLazy, ConcatSkipsWindowsAsItPlansThemAndCountsItsEpochInClosedForm) {
  for (std::uint64_t seed = 0; seed < 40; ++seed) {
    const std::size_t s = 4 + seed % 7 * 5;
    const stoke::testing::TokenCorpus corpus(
        stoke::testing::random_lengths(seed * 11 + seed % 3, s * 3, seed));
    const stoke::ConcatPlanner planner(corpus.lengths(), {.sequence_length = s,
                                                          .shifted = seed % 2 == 0,
                                                          .rows_per_batch = 1 + seed % 5,
                                                          .window_batches = 1 + seed % 4,
                                                          .shuffle = seed % 3 != 0,
                                                          .seed = seed});
    for (std::size_t epoch = 0; epoch < 2; ++epoch) {
      const std::string context =
          "seed " + std::to_string(seed) + " epoch " + std::to_string(epoch);
      stoke::WindowStart start{};
      std::size_t total = 0;
      for (;;) {
        const stoke::WindowPlan plan = planner.plan_window(epoch, start);
        const stoke::WindowSkip skip = planner.skip_window(epoch, start);
        ASSERT_EQ(skip, (stoke::WindowSkip{plan.batches.size(), plan.next, plan.last}))
            << context << " window " << start.window;
        total += plan.batches.size();
        if (plan.last) break;
        start = plan.next;
      }
      EXPECT_EQ(planner.epoch_batches(epoch), total) << context;
    }
  }
}

TEST(SequencePlanLazy, ConcatBatchesInAnyOrderAreThePlansAndPlanOnlyTheirWindows) {
  for (std::uint64_t seed = 0; seed < 12; ++seed) {
    const stoke::testing::TokenCorpus corpus(stoke::testing::random_lengths(300, 60, seed));
    const CountingConcat counting{stoke::ConcatPlanner(
        corpus.lengths(),
        {.sequence_length = 16, .rows_per_batch = 3, .window_batches = 5, .seed = seed})};
    const stoke::PlanWindows<CountingConcat> windows(counting);
    const auto expected = stoke::testing::whole_plan(counting.planner, 1);
    ASSERT_EQ(windows.epoch_batches(1), expected.size());
    counting.planned->store(0);
    // From the back, as a resume near the end would, then every batch in a shuffled order.
    EXPECT_EQ(windows.batch(1, expected.size() - 1), expected.back()) << "seed " << seed;
    EXPECT_EQ(counting.planned->load(), 1u) << "one window planned for the epoch's last batch";
    for (std::size_t i = 0; i < expected.size(); ++i) {
      const std::size_t b = (i * 7919 + seed) % expected.size();
      ASSERT_EQ(windows.batch(1, b), expected[b]) << "seed " << seed << " batch " << b;
    }
    EXPECT_THROW((void)windows.batch(1, expected.size()), stoke::UsageError);
  }
}

TEST(SequencePlanLazy, AConcatLoaderCountsAHugeEpochAndPlansOneWindowForItsFirstBatch) {
  const CountedLengths counted;
  constexpr std::size_t documents = 2'000'000;
  const CountingConcat counting{stoke::ConcatPlanner(
      counted.lengths(documents),
      {.sequence_length = 2048, .rows_per_batch = 8, .window_batches = 4, .seed = 5})};
  const stoke::PlanWindows<CountingConcat> windows(counting);
  counted.reads->store(0);
  const std::size_t batches = windows.epoch_batches(0);
  EXPECT_GT(batches, 1000u);
  EXPECT_EQ(counted.reads->load(), documents) << "the epoch is counted by one sum of lengths";
  EXPECT_EQ(counting.planned->load(), 0u) << "and without planning a window";
  const auto first = windows.batch(0, 0);
  EXPECT_EQ(first.rows.size(), 8u);
  const auto deep = windows.batch(0, batches / 2);
  EXPECT_EQ(deep.rows.size(), 8u);
  EXPECT_EQ(counting.planned->load(), 2u) << "one window for each, none between";
}

}  // namespace

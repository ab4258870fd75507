// Shares of a variable-length batch plan: equal batch counts on every device and rank by
// construction, every batch of the epoch delivered once (padding marked, dropped rounds
// reported by their absence), exact and elastic resume from a small state, and a plan computed
// one window at a time.
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <stoke/stoke.hpp>

#include "token_corpus.hpp"

namespace {

using stoke::testing::random_lengths;
using stoke::testing::TokenCorpus;
using stoke::testing::TokenUses;
using stoke::testing::whole_plan;

/// A planner that counts the windows it planned (shared by its copies).
template <class P>
struct CountingPlanner {
  P planner;
  std::shared_ptr<std::size_t> windows = std::make_shared<std::size_t>(0);
  [[nodiscard]] stoke::WindowPlan plan_window(std::size_t epoch,
                                              const stoke::WindowStart& start) const {
    ++*windows;
    return planner.plan_window(epoch, start);
  }
  [[nodiscard]] std::uint64_t fingerprint() const { return planner.fingerprint(); }
};

/// What every share of a split delivered, batch by batch, from `from` until the epoch ends or
/// each delivered `steps` batches.
template <class P>
std::vector<std::vector<stoke::ShareBatch>> run_split(const P& planner, std::size_t count,
                                                      stoke::Remainder remainder,
                                                      const stoke::SequencePlanState& from,
                                                      std::size_t steps = SIZE_MAX) {
  std::vector<std::vector<stoke::ShareBatch>> out(count);
  for (std::size_t k = 0; k < count; ++k) {
    stoke::PlanShare<P> share(planner, count, k, remainder, from);
    while (out[k].size() < steps) {
      auto batch = share.next();
      if (!batch) break;
      out[k].push_back(std::move(*batch));
    }
  }
  return out;
}

/// The state of a split after every share delivered `steps` batches (checking they agree).
template <class P>
stoke::SequencePlanState split_state_after(const P& planner, std::size_t count,
                                           stoke::Remainder remainder,
                                           const stoke::SequencePlanState& from,
                                           std::size_t steps) {
  std::vector<stoke::SequencePlanState> states;
  for (std::size_t k = 0; k < count; ++k) {
    stoke::PlanShare<P> share(planner, count, k, remainder, from);
    for (std::size_t s = 0; s < steps; ++s) (void)share.next();
    states.push_back(share.state());
  }
  for (const auto& state : states) EXPECT_EQ(state, states.front());
  return states.front();
}

/// Checks that `delivered` (all shares' batches, any order) are the plan's batches, and that the
/// real ones are batches `[0, covered)` of the plan once each (padding repeats others).
void expect_batches_cover(const std::vector<stoke::PlannedBatch>& plan,
                          const std::vector<stoke::ShareBatch>& delivered, std::size_t covered,
                          const std::string& context) {
  std::vector<int> seen(plan.size(), 0);
  for (const auto& batch : delivered) {
    ASSERT_LT(batch.epoch_batch, plan.size()) << context;
    EXPECT_EQ(batch.batch, plan[batch.epoch_batch]) << context;
    if (!batch.padding) ++seen[batch.epoch_batch];
  }
  for (std::size_t b = 0; b < plan.size(); ++b) {
    EXPECT_EQ(seen[b], b < covered ? 1 : 0) << context << " batch " << b;
  }
}

/// The planners under test: concatenation, first-fit and buckets over `corpus`.
struct Planners {
  stoke::ConcatPlanner concat;
  stoke::FitPlanner fit;
  stoke::BucketPlanner bucket;
};

Planners planners_for(const TokenCorpus& corpus, std::uint64_t seed) {
  return Planners{
      stoke::ConcatPlanner(corpus.lengths(), {.sequence_length = 8 + seed % 4 * 4,
                                              .shifted = seed % 2 == 0,
                                              .rows_per_batch = 1 + seed % 3,
                                              .window_batches = 1 + seed % 4,
                                              .seed = seed}),
      stoke::FitPlanner(corpus.lengths(),
                        {.sequence_length = 24,
                         .rows_per_batch = 1 + seed % 2,
                         .window_documents = 3 + seed % 5 * 4,
                         .seed = seed,
                         .fit = seed % 2 ? stoke::PackFit::first : stoke::PackFit::best}),
      stoke::BucketPlanner(corpus.lengths(),
                           {.budget = 96, .window_documents = 5 + seed % 3 * 7, .seed = seed})};
}

template <class P>
void expect_split_properties(const P& planner, std::size_t epoch, std::uint64_t seed,
                             const std::string& name) {
  const auto plan = whole_plan(planner, epoch);
  for (const std::size_t ranks : {1u, 2u, 3u}) {
    for (const std::size_t devices : {1u, 2u, 4u}) {
      const std::size_t count = ranks * devices;
      for (const auto remainder : {stoke::Remainder::drop, stoke::Remainder::pad}) {
        const std::string context = name + " seed " + std::to_string(seed) + " shares " +
                                    std::to_string(count) + " " +
                                    std::string(stoke::remainder_name(remainder));
        const stoke::SequencePlanState start{.epoch = epoch, .fingerprint = planner.fingerprint()};
        // Uninterrupted: every share the same number of batches.
        const auto shares = run_split(planner, count, remainder, start);
        std::vector<stoke::ShareBatch> all;
        for (std::size_t k = 0; k < count; ++k) {
          EXPECT_EQ(shares[k].size(), shares.front().size()) << context;
          all.insert(all.end(), shares[k].begin(), shares[k].end());
          // Share k takes batch k of every round; padding wraps to the epoch's first batches.
          for (std::size_t t = 0; t < shares[k].size(); ++t) {
            const std::size_t batch = t * count + k;
            const bool padding = batch >= plan.size();
            EXPECT_EQ(shares[k][t].padding, padding) << context;
            EXPECT_EQ(shares[k][t].epoch_batch,
                      padding ? (batch - plan.size()) % plan.size() : batch)
                << context;
          }
        }
        const std::size_t dropped_with = remainder == stoke::Remainder::drop ? count : 1;
        expect_batches_cover(plan, all, plan.size() / dropped_with * dropped_with, context);
        // Interrupted after some steps, resumed from JSON onto another number of shares.
        const std::size_t steps = shares.front().size() * (1 + seed % 3) / 4;
        const auto state = split_state_after(planner, count, remainder, start, steps);
        const auto restored = stoke::sequence_plan_state_from_json(stoke::to_json(state));
        ASSERT_EQ(restored, state) << context;
        const std::size_t other = 1 + (count + seed) % 5;
        std::vector<stoke::ShareBatch> resumed;
        for (auto& share : run_split(planner, count, remainder, start, steps)) {
          resumed.insert(resumed.end(), share.begin(), share.end());
        }
        const auto after = run_split(planner, other, remainder, restored);
        for (const auto& share : after) {
          EXPECT_EQ(share.size(), after.front().size()) << context;
          resumed.insert(resumed.end(), share.begin(), share.end());
        }
        if (state.epoch != epoch) continue;  // the first part ended the epoch
        const std::size_t left = plan.size() - state.consumed;
        const std::size_t resumed_drop = remainder == stoke::Remainder::drop ? other : 1;
        expect_batches_cover(plan, resumed, state.consumed + left / resumed_drop * resumed_drop,
                             context + " resumed onto " + std::to_string(other));
      }
    }
  }
}

TEST(PlanShare, EqualBatchCountsEveryBatchOnceAndElasticResumeOverManyPlans) {
  for (std::uint64_t seed = 0; seed < 10; ++seed) {
    const TokenCorpus corpus(random_lengths(30 + seed * 19, 24, seed + 50));
    const Planners planners = planners_for(corpus, seed);
    expect_split_properties(planners.concat, seed % 2, seed, "concat");
    expect_split_properties(planners.fit, seed % 2, seed, "fit");
    expect_split_properties(planners.bucket, seed % 2, seed, "bucket");
  }
}

TEST(PlanShare, EveryTokenOnceAcrossSharesAndAResume) {
  const TokenCorpus corpus(random_lengths(400, 40, 77));
  const stoke::ConcatPlanner planner(
      corpus.lengths(),
      {.sequence_length = 16, .rows_per_batch = 2, .window_batches = 3, .seed = 4});
  const stoke::SequencePlanState start{.fingerprint = planner.fingerprint()};
  const auto state = split_state_after(planner, 3, stoke::Remainder::pad, start, 5);
  TokenUses uses(corpus.lengths());
  for (const auto& share : run_split(planner, 3, stoke::Remainder::pad, start, 5)) {
    for (const auto& batch : share) uses.add(batch.batch, 16);
  }
  for (const auto& share : run_split(planner, 2, stoke::Remainder::pad, state)) {
    for (const auto& batch : share) {
      if (!batch.padding) uses.add(batch.batch, 16);
    }
  }
  EXPECT_EQ(uses.first_not_once(), "");
}

TEST(PlanShare, TheFirstBatchPlansOneWindowAndAResumePlansFromItsWindow) {
  const TokenCorpus corpus(random_lengths(5000, 30, 3));
  const CountingPlanner<stoke::FitPlanner> planner{
      stoke::FitPlanner(corpus.lengths(), {.sequence_length = 32, .window_documents = 64})};
  stoke::PlanShare<CountingPlanner<stoke::FitPlanner>> share(planner, 2, 1, stoke::Remainder::pad);
  ASSERT_TRUE(share.next());
  EXPECT_LE(*planner.windows, 3u);  // the share's walk, its look-ahead, nothing more
  for (int s = 0; s < 200; ++s) ASSERT_TRUE(share.next());
  const auto state = share.state();
  EXPECT_GT(state.cursor.start.window, 5u);
  *planner.windows = 0;
  stoke::PlanShare<CountingPlanner<stoke::FitPlanner>> resumed(planner, 3, 0, stoke::Remainder::pad,
                                                               state);
  ASSERT_TRUE(resumed.next());
  EXPECT_LE(*planner.windows, 3u);  // not a replay of the windows before
}

TEST(PlanShare, RefusesAStateOfAnotherPlan) {
  const TokenCorpus corpus(random_lengths(100, 30, 3));
  const stoke::FitPlanner planner(corpus.lengths(), {.sequence_length = 32, .seed = 1});
  const stoke::FitPlanner other(corpus.lengths(), {.sequence_length = 64, .seed = 1});
  stoke::PlanShare<stoke::FitPlanner> share(planner, 1, 0, stoke::Remainder::pad);
  (void)share.next();
  const auto state = share.state();
  EXPECT_THROW(stoke::PlanShare<stoke::FitPlanner>(other, 1, 0, stoke::Remainder::pad, state),
               stoke::StateError);
  EXPECT_THROW(stoke::PlanShare<stoke::FitPlanner>(planner, 2, 0, stoke::Remainder::partial),
               stoke::UsageError);
}

TEST(PlanShare, TheEpochsEndStartsTheNextEpochInTheState) {
  const TokenCorpus corpus(random_lengths(50, 30, 3));
  const stoke::BucketPlanner planner(corpus.lengths(), {.budget = 64, .seed = 1});
  stoke::PlanShare<stoke::BucketPlanner> share(planner, 2, 0, stoke::Remainder::drop, 4);
  while (share.next()) {
  }
  const auto state = share.state();
  EXPECT_EQ(state.epoch, 5u);
  EXPECT_EQ(state.consumed, 0u);
}

}  // namespace

namespace {

// The book's walkthrough (book/docs/sequences.md): a packed epoch split over two devices,
// interrupted, and resumed onto three.
TEST(PlanShare, BookWalkthroughPacksSplitsAndResumesOntoMoreDevices) {
  const TokenCorpus corpus(random_lengths(1000, 300, 1));
  // --8<-- [start:pack]
  // Documents of the corpus, concatenated in the epoch's order and cut into rows of 128 tokens
  // (plus the last input's target), 8 rows a batch, planned 64 batches at a time.
  const stoke::ConcatPlanner planner(corpus.lengths(), {.sequence_length = 128,
                                                        .shifted = true,
                                                        .rows_per_batch = 8,
                                                        .window_batches = 64,
                                                        .seed = 42});
  // Device 1 of 2: batches 1, 3, 5, ... of the epoch's plan; the last round padded.
  stoke::PlanShare<stoke::ConcatPlanner> device(planner, 2, 1, stoke::Remainder::pad);
  const auto first = device.next();
  const stoke::PackedBatch packed = stoke::make_packed_batch(first->batch, corpus, /*pad_id=*/0);
  // packed.tokens, .segment_ids, .positions, .cu_seqlens and .loss_mask are 8 x 129 slots.
  // --8<-- [end:pack]
  EXPECT_EQ(packed.tokens.size(), 8u * 129u);
  EXPECT_EQ(first->epoch_batch, 1u);
  for (int i = 0; i < 9; ++i) (void)device.next();
  // --8<-- [start:resume]
  // Both devices delivered 10 batches: the state says 20 batches of the epoch were consumed,
  // and which plan window holds batch 20; it is the same on every device.
  const stoke::SequencePlanState state = device.state();
  const nlohmann::json saved = stoke::to_json(state);  // into the checkpoint
  // Resumed onto three devices: device 0 goes on with batch 20, 23, 26, ...
  stoke::PlanShare<stoke::ConcatPlanner> resumed(planner, 3, 0, stoke::Remainder::pad,
                                                 stoke::sequence_plan_state_from_json(saved));
  // --8<-- [end:resume]
  EXPECT_EQ(state.consumed, 20u);
  EXPECT_EQ(resumed.next()->epoch_batch, 20u);
}

}  // namespace

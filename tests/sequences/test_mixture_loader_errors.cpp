// Mixtures in stoke's own loader, the refusals and the typed road: a source that runs out under
// SourceExhaustion::error is a DataError naming the source, epoch and pick; a state saved under
// other weights, schedule, sources, seed or counts is refused naming what changed; a
// concatenating MixturePlanner skips windows as ConcatPlanner does and plans the same batches;
// the sources' concatenation (`stoke::concat`) is the loader's dataset.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <stoke/stoke.hpp>

#include "mixture_loader.hpp"
#include "planned_loader.hpp"
#include "token_corpus.hpp"

namespace {

using stoke::testing::MixtureShape;
using stoke::testing::PlanKind;
using stoke::testing::TokenCorpus;
using ::testing::HasSubstr;
using ::testing::ThrowsMessage;

static_assert(stoke::SkippingPlanner<stoke::MixturePlanner<stoke::ConcatPlanner>>);
static_assert(!stoke::SkippingPlanner<stoke::MixturePlanner<stoke::FitPlanner>>);
static_assert(stoke::ReportingPlanner<stoke::MixturePlanner<stoke::BucketPlanner>>);

/// Two sources of 5 and 8 documents, weights 1 and 1, concatenated, in rows of 8 tokens.
MixtureShape two_sources() {
  MixtureShape shape;
  shape.sources = {{3, 9, 4, 7, 5}, {6, 2, 8, 3, 10, 4, 1, 6}};
  shape.weights = {1, 1};
  shape.options.exhaustion = stoke::SourceExhaustion::wrap;
  shape.options.samples_per_epoch = 20;
  shape.plan.kind = PlanKind::concat;
  shape.plan.sequence_length = 8;
  shape.plan.rows = 2;
  shape.plan.window = 2;
  return shape;
}

TEST(MixtureLoaderErrors, ASourceThatRunsOutIsADataErrorNamingTheSourceEpochAndPick) {
  MixtureShape shape = two_sources();
  shape.options.exhaustion = stoke::SourceExhaustion::error;
  const TokenCorpus corpus(shape.concatenated());
  for (const PlanKind kind : {PlanKind::concat, PlanKind::first_fit}) {
    shape.plan.kind = kind;
    auto loader = stoke::testing::mixture_loader(shape, corpus, 2);
    try {
      for (const auto& batch : loader.iter()) static_cast<void>(batch);
      FAIL() << "source 0 has 5 documents, and the epoch asks 10 of each";
    } catch (const stoke::DataError& error) {
      EXPECT_THAT(error.what(), HasSubstr("mixture source 0 ran out after 5 samples, at pick 10 "
                                          "of epoch 0"));
      EXPECT_EQ(error.context().activity, "plan");
      EXPECT_EQ(error.context().epoch, 0u);
      EXPECT_EQ(error.context().index, 10u);
      EXPECT_THROW(std::rethrow_if_nested(error), stoke::InputError);
    }
  }
}

TEST(MixtureLoaderErrors, ARestoreUnderAnotherMixtureIsRefusedNamingWhatChanged) {
  const MixtureShape shape = two_sources();
  const TokenCorpus corpus(shape.concatenated());
  auto loader = stoke::testing::mixture_loader(shape, corpus, 1);
  std::size_t taken = 0;
  for (const auto& batch : loader.iter()) {
    static_cast<void>(batch);
    if (++taken == 2) break;
  }
  const stoke::LoaderState state = loader.state();
  ASSERT_EQ(state.consumed, 2u);
  ASSERT_TRUE(state.plan_state.is_object());
  const auto refused = [&](const MixtureShape& other, const std::string& says) {
    const TokenCorpus other_corpus(other.concatenated());
    auto resumed = stoke::testing::mixture_loader(other, other_corpus, 1);
    EXPECT_THAT([&] { resumed.restore(state); }, ThrowsMessage<stoke::InputError>(HasSubstr(says)));
  };
  MixtureShape other = shape;
  other.weights = {1, 2};
  refused(other,
          "the mixture's weight of source 1 changed: it was saved with [1,1], this "
          "loader has [1,2]");
  other = shape;
  other.options.schedule = {{.from_pick = 10, .weights = {3, 1}}};
  refused(other, "the mixture's weight schedule changed");
  other = shape;
  other.sources[0][2] = 5;
  refused(other, "the mixture's documents of source 0 changed");
  other = shape;
  other.sources.push_back({4, 4});
  other.weights.push_back(1);
  refused(other, "the mixture's number of sources (weights) changed");
  other = shape;
  other.options.seed = 9;
  refused(other, "the mixture's seed changed");
  other = shape;
  other.options.unit = stoke::MixtureUnit::tokens;
  refused(other, "the mixture's unit changed: it was saved with \"samples\"");

  // Edited counts, and a state without the mixture's account.
  auto again = stoke::testing::mixture_loader(shape, corpus, 1);
  stoke::LoaderState edited = state;
  edited.plan_state["consumed"][0] = 99;
  EXPECT_THAT([&] { again.restore(edited); },
              ThrowsMessage<stoke::InputError>(HasSubstr("its mixture counts (documents [99,")));
  stoke::LoaderState bare = state;
  bare.plan_state = nullptr;
  EXPECT_THAT([&] { again.restore(bare); },
              ThrowsMessage<stoke::InputError>(HasSubstr("it has no mixture account")));
  again.restore(state);  // the state itself still resumes
  std::size_t rest = 0;
  for (const auto& batch : again.iter()) rest += batch.padding == 1 ? 0 : 1;
  EXPECT_EQ(rest + 2, loader.batcher().epoch_batches(0));
}

TEST(MixtureLoaderErrors, AConcatenatingMixtureSkipsWindowsAndPlansAsTheWalkedOne) {
  const MixtureShape shape = two_sources();
  const auto typed = stoke::PlannedBatcher(stoke::mixture_planner<stoke::ConcatPlanner>(
      shape.mixture(),
      stoke::ConcatOptions{.sequence_length = 8, .rows_per_batch = 2, .window_batches = 2}));
  const stoke::PlannedBatcher walked{stoke::testing::AnyMixturePlanner(shape)};
  for (std::size_t epoch = 0; epoch < 2; ++epoch) {
    ASSERT_EQ(typed.epoch_batches(epoch), walked.epoch_batches(epoch));
    for (std::size_t b = typed.epoch_batches(epoch); b-- > 0;) {  // backwards: skips, then plans
      EXPECT_EQ(typed.planned(epoch, b), walked.planned(epoch, b)) << "batch " << b;
      EXPECT_EQ(typed.plan_state(epoch, b), walked.plan_state(epoch, b)) << "batch " << b;
    }
  }
  EXPECT_EQ(typed.plan_fingerprint(), walked.plan_fingerprint());
}

TEST(MixtureLoaderErrors, TheSourcesConcatenationIsTheLoadersDataset) {
  const MixtureShape shape = two_sources();
  std::vector<TokenCorpus> parts;
  for (const auto& source : shape.sources) parts.emplace_back(source);
  const TokenCorpus whole(shape.concatenated());
  using Batcher = stoke::PlannedBatcher<stoke::testing::AnyMixturePlanner>;
  stoke::LoaderOptions options;
  options.remainder = stoke::Remainder::pad;
  options.num_workers = 2;
  stoke::MultiThreadLoader<stoke::ConcatDataset<TokenCorpus>, Batcher, stoke::cpu::Backend> loader(
      stoke::concat(parts), Batcher(stoke::testing::AnyMixturePlanner(shape), -1), options);
  auto reference = stoke::testing::mixture_loader(shape, whole, 0);
  std::vector<stoke::PackedBatch> expected;
  for (const auto& batch : reference.iter()) expected.push_back(batch.data);
  std::size_t k = 0;
  for (const auto& batch : loader.iter()) {
    ASSERT_LT(k, expected.size());
    // Tokens name the document within its source; everything else is the same.
    EXPECT_EQ(batch.data.documents, expected[k].documents);
    EXPECT_EQ(batch.data.segment_ids, expected[k].segment_ids);
    EXPECT_EQ(batch.data.cu_seqlens, expected[k].cu_seqlens);
    ++k;
  }
  EXPECT_EQ(k, expected.size());
}

}  // namespace

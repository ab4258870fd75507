// Property tests of sequence plans run by stoke's own multithread loader (PlannedBatcher), over
// random (lengths, plan kind, sequence length, rows, window, devices, ranks, workers, remainder,
// resume point): every token of every document used exactly once per epoch, segment ids,
// positions, cu_seqlens and the loss mask agreeing with the documents, equal batch counts on
// every device and rank, exact and elastic resume mid-epoch, the same bits for any worker count.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <random>
#include <string>
#include <vector>

#include <stoke/stoke.hpp>

#include "planned_loader.hpp"
#include "token_corpus.hpp"

namespace {

/// One delivered batch: which planned batch, its tensors, whether padding.
struct Delivered {
  std::size_t planned = 0;
  stoke::PackedBatch data;
  bool padding = false;
};

using stoke::testing::device_loaders;
using stoke::testing::PlanKind;
using stoke::testing::PlannedLoader;
using stoke::testing::PlanShape;
using stoke::testing::TokenCorpus;

/// Token slots of each row that are inputs (the first S of a shifted row of S + 1).
std::size_t inputs_per_row(const PlanShape& shape) {
  return shape.kind == PlanKind::concat_shifted ? shape.sequence_length : SIZE_MAX;
}

/// Takes up to `steps` batches from every part in lockstep (all of them by default).
std::vector<std::vector<Delivered>> run_parts(std::vector<PlannedLoader>& parts,
                                              std::size_t steps = SIZE_MAX) {
  std::vector<std::vector<Delivered>> out(parts.size());
  std::vector<stoke::BatchRange<PlannedLoader::batch_type>> ranges;
  for (auto& part : parts) ranges.push_back(part.iter());
  std::vector<decltype(ranges[0].begin())> its;
  for (std::size_t p = 0; p < parts.size(); ++p) {
    for (std::size_t t = 0; t < steps; ++t) {
      if (t == 0) {
        its.push_back(ranges[p].begin());
      } else {
        ++its[p];
      }
      if (its[p] == ranges[p].end()) break;
      auto& batch = *its[p];
      EXPECT_EQ(batch.indices.size(), 1u);
      out[p].push_back({batch.indices.at(0), batch.data, batch.padding == 1});
    }
  }
  return out;
}

/// Checks what every part delivered in one epoch (or the rest of it) and counts its tokens;
/// returns the planned batches delivered that were not padding, in order of delivery.
std::vector<std::size_t> check_delivered(const PlanShape& shape,
                                         const std::vector<std::vector<Delivered>>& delivered,
                                         std::vector<std::vector<int>>& uses) {
  std::vector<std::size_t> real;
  for (std::size_t p = 0; p < delivered.size(); ++p) {
    EXPECT_EQ(delivered[p].size(), delivered[0].size()) << "part " << p << " " << shape.describe();
    for (const Delivered& batch : delivered[p]) {
      if (batch.padding) {
        EXPECT_TRUE(std::all_of(batch.data.loss_mask.begin(), batch.data.loss_mask.end(),
                                [](auto m) { return m == 0; }))
            << "a padding batch must say so in its loss mask; " << shape.describe();
        continue;
      }
      real.push_back(batch.planned);
      const std::string fault =
          stoke::testing::packed_batch_fault(batch.data, inputs_per_row(shape), &uses);
      EXPECT_EQ(fault, "") << "planned batch " << batch.planned << "; " << shape.describe();
    }
  }
  return real;
}

std::vector<std::vector<int>> no_uses(const PlanShape& shape) {
  std::vector<std::vector<int>> uses;
  for (const auto length : shape.lengths) uses.emplace_back(length, 0);
  return uses;
}

/// Empty when every token was used once (`pad`), or at most once with the unused ones all in
/// batches of the dropped last round (`drop`); else the first that was not.
std::string token_fault(const PlanShape& shape, const std::vector<std::vector<int>>& uses,
                        std::size_t real_batches, std::size_t total_batches) {
  const bool all = shape.remainder == stoke::Remainder::pad || real_batches == total_batches;
  for (std::size_t d = 0; d < uses.size(); ++d) {
    for (std::size_t t = 0; t < uses[d].size(); ++t) {
      if (uses[d][t] > 1 || (all && uses[d][t] != 1)) {
        return "token " + std::to_string(t) + " of document " + std::to_string(d) + " used " +
               std::to_string(uses[d][t]) + " times";
      }
    }
  }
  return {};
}

TEST(PlannedLoader, EveryTokenOnceEqualCountsOnEveryDeviceAndRank) {
  std::mt19937_64 rng(37);
  for (int trial = 0; trial < 60; ++trial) {
    const PlanShape shape = stoke::testing::random_plan_shape(rng);
    SCOPED_TRACE(shape.describe());
    const TokenCorpus corpus(shape.lengths);
    auto loader = stoke::testing::planned_loader(shape, corpus, shape.workers);
    const std::size_t n = shape.devices * shape.ranks;
    for (std::size_t epoch = 0; epoch < 2; ++epoch) {
      auto parts = device_loaders(loader, shape.ranks, shape.devices);
      for (auto& part : parts) part.set_epoch(epoch);
      const std::size_t total = loader.batcher().epoch_batches(epoch);
      const std::size_t rounds =
          shape.remainder == stoke::Remainder::pad ? (total + n - 1) / n : total / n;
      for (const auto& part : parts) ASSERT_EQ(part.num_batches(), rounds);
      auto uses = no_uses(shape);
      const auto delivered = run_parts(parts);
      for (const auto& part : delivered) ASSERT_EQ(part.size(), rounds);
      auto real = check_delivered(shape, delivered, uses);
      std::sort(real.begin(), real.end());
      std::vector<std::size_t> expected(std::min(total, rounds * n));
      std::iota(expected.begin(), expected.end(), 0);
      EXPECT_EQ(real, expected) << "epoch " << epoch;
      EXPECT_EQ(token_fault(shape, uses, real.size(), total), "") << "epoch " << epoch;
    }
  }
}

TEST(PlannedLoader, BatchesAreThePlansBatchesWithTheSameBitsForAnyWorkerCount) {
  std::mt19937_64 rng(4);
  for (int trial = 0; trial < 12; ++trial) {
    const PlanShape shape = stoke::testing::random_plan_shape(rng);
    SCOPED_TRACE(shape.describe());
    const TokenCorpus corpus(shape.lengths);
    const stoke::testing::AnyTestPlanner planner(shape);
    const auto plan = stoke::testing::whole_plan(planner, 3);
    std::vector<std::vector<std::vector<Delivered>>> runs;
    for (const std::size_t workers : {0u, 1u, 2u, 4u}) {
      auto loader = stoke::testing::planned_loader(shape, corpus, workers);
      loader.set_epoch(3);
      auto parts = device_loaders(loader, shape.ranks, shape.devices);
      runs.push_back(run_parts(parts));
    }
    for (std::size_t r = 0; r < runs.size(); ++r) {
      ASSERT_EQ(runs[r].size(), runs[0].size());
      for (std::size_t p = 0; p < runs[r].size(); ++p) {
        ASSERT_EQ(runs[r][p].size(), runs[0][p].size());
        for (std::size_t t = 0; t < runs[r][p].size(); ++t) {
          const Delivered& batch = runs[r][p][t];
          EXPECT_EQ(batch.planned, runs[0][p][t].planned);
          EXPECT_TRUE(stoke::testing::same_packed_bits(batch.data, runs[0][p][t].data))
              << "run " << r << " part " << p << " step " << t;
          if (batch.padding) continue;
          EXPECT_TRUE(stoke::testing::same_packed_bits(
              batch.data, stoke::make_packed_batch(plan.at(batch.planned), corpus,
                                                   stoke::testing::test_pad_id)))
              << "planned batch " << batch.planned;
        }
      }
    }
  }
}

TEST(PlannedLoader, ResumesMidEpochExactlyAlsoOntoOtherDevicesRanksAndWorkers) {
  std::mt19937_64 rng(11);
  for (int trial = 0; trial < 40; ++trial) {
    const PlanShape shape = stoke::testing::random_plan_shape(rng);
    PlanShape after = shape;
    after.devices = std::uniform_int_distribution<std::size_t>(1, 4)(rng);
    after.ranks = std::uniform_int_distribution<std::size_t>(1, 3)(rng);
    after.workers = std::uniform_int_distribution<std::size_t>(0, 3)(rng);
    SCOPED_TRACE(shape.describe() + " -> devices=" + std::to_string(after.devices) + " ranks=" +
                 std::to_string(after.ranks) + " workers=" + std::to_string(after.workers));
    const TokenCorpus corpus(shape.lengths);
    auto loader = stoke::testing::planned_loader(shape, corpus, shape.workers);
    loader.set_epoch(1);
    auto parts = device_loaders(loader, shape.ranks, shape.devices);
    const std::size_t rounds = parts[0].num_batches();
    const std::size_t stop = std::uniform_int_distribution<std::size_t>(0, rounds)(rng);
    const auto before = run_parts(parts, stop);
    const stoke::LoaderState state = stoke::split_state(parts);
    const auto json = stoke::to_json(state);
    ASSERT_TRUE(json.contains("plan_fingerprint"));
    const stoke::LoaderState read = stoke::loader_state_from_json(json);
    ASSERT_EQ(read, state);

    auto resumed = stoke::testing::planned_loader(after, corpus, after.workers);
    resumed.restore(read);
    auto resumed_parts = device_loaders(resumed, after.ranks, after.devices);
    // A state taken when only padding (or nothing) was left points at the next epoch.
    std::vector<std::vector<Delivered>> rest;
    if (state.epoch == 1) {
      rest = run_parts(resumed_parts);
      for (const auto& part : resumed_parts) EXPECT_EQ(part.epoch(), 2u);
    } else {
      EXPECT_EQ(state.epoch, 2u);
      EXPECT_EQ(state.consumed, 0u);
    }

    auto uses = no_uses(shape);
    auto real = check_delivered(shape, before, uses);
    const auto real_after = check_delivered(after, rest, uses);
    real.insert(real.end(), real_after.begin(), real_after.end());
    std::sort(real.begin(), real.end());
    const std::size_t total = loader.batcher().epoch_batches(1);
    if (shape.remainder == stoke::Remainder::pad) {
      std::vector<std::size_t> expected(total);
      std::iota(expected.begin(), expected.end(), 0);
      EXPECT_EQ(real, expected);
    } else {  // each batch at most once; what is dropped is the end of the epoch
      EXPECT_TRUE(std::adjacent_find(real.begin(), real.end()) == real.end());
      for (std::size_t k = 0; k < real.size(); ++k) EXPECT_EQ(real[k], k);
    }
    EXPECT_EQ(token_fault(shape, uses, real.size(), total), "");
  }
}

TEST(PlannedLoader, RefusesAStateOfAnotherPlanOrOfSamples) {
  PlanShape shape;
  shape.lengths = {5, 9, 3, 12, 7, 1, 30};
  shape.seed = 1;
  const TokenCorpus corpus(shape.lengths);
  auto loader = stoke::testing::planned_loader(shape, corpus, 1);
  const stoke::LoaderState state = loader.state();
  EXPECT_NE(state.plan_fingerprint, 0u);
  PlanShape other = shape;
  other.seed = 2;
  auto reseeded = stoke::testing::planned_loader(other, corpus, 1);
  EXPECT_THAT([&] { reseeded.restore(state); },
              ::testing::ThrowsMessage<stoke::InputError>(::testing::HasSubstr(
                  "saved with plan fingerprint " + std::to_string(state.plan_fingerprint))));
  other = shape;
  other.sequence_length = 17;
  auto longer = stoke::testing::planned_loader(other, corpus, 1);
  EXPECT_THROW(longer.restore(state), stoke::InputError);
  stoke::LoaderState of_samples = state;
  of_samples.plan_fingerprint = 0;
  EXPECT_THAT([&] { loader.restore(of_samples); },
              ::testing::ThrowsMessage<stoke::InputError>(
                  ::testing::HasSubstr("saved with plan fingerprint 0")));
  stoke::LoaderState too_far = state;
  too_far.consumed = loader.batcher().epoch_batches(0) + 1;
  EXPECT_THAT([&] { loader.restore(too_far); },
              ::testing::ThrowsMessage<stoke::InputError>(::testing::HasSubstr("planned batches")));
}

TEST(PlannedLoader, ALoaderOfSamplesKeepsItsStateFormatAndRefusesAPlannedState) {
  PlanShape shape;
  shape.lengths = {5, 9, 3, 12, 7, 1, 30};
  const TokenCorpus corpus(shape.lengths);
  stoke::LoaderOptions options;
  options.batch_size = 2;
  options.remainder = stoke::Remainder::pad;
  stoke::MultiThreadLoader<TokenCorpus, stoke::PadBatcher, stoke::cpu::Backend> padded(
      corpus, stoke::PadBatcher{}, options);
  const auto json = stoke::to_json(padded.state());
  EXPECT_FALSE(json.contains("plan_fingerprint")) << json.dump();
  EXPECT_EQ(stoke::loader_state_from_json(json).plan_fingerprint, 0u);
  const auto planned = stoke::testing::planned_loader(shape, corpus, 1).state();
  EXPECT_THAT([&] { padded.restore(planned); },
              ::testing::ThrowsMessage<stoke::InputError>(
                  ::testing::HasSubstr("this loader's plan has 0")));
}

TEST(PlannedLoader, ADocumentShorterThanPlannedIsADataErrorNamingIt) {
  PlanShape shape;
  shape.lengths = {5, 9, 3, 12};
  shape.kind = PlanKind::first_fit;
  const TokenCorpus shorter(std::vector<std::int32_t>{5, 9, 2, 12});  // document 2 lost a token
  auto loader = stoke::testing::planned_loader(shape, shorter, 2);
  EXPECT_THAT(
      [&] {
        for (auto& batch : loader.iter()) (void)batch;
      },
      ::testing::ThrowsMessage<stoke::DataError>(::testing::HasSubstr("document 2 has 2 tokens")));
}

TEST(PlannedLoader, RefusesSettingsThePlanOwns) {
  PlanShape shape;
  shape.lengths = {5, 9};
  const TokenCorpus corpus(shape.lengths);
  stoke::LoaderOptions options;
  options.batch_size = 4;
  EXPECT_THAT(
      [&] {
        (void)PlannedLoader(corpus,
                            stoke::PlannedBatcher<stoke::testing::AnyTestPlanner>(
                                stoke::testing::AnyTestPlanner(shape)),
                            options);
      },
      ::testing::ThrowsMessage<stoke::UsageError>(::testing::HasSubstr("leave shuffle")));
}

TEST(PlannedLoader, ASliceCloseAndAnotherDeviceWorkAsForSamples) {
  PlanShape shape;
  shape.lengths = stoke::testing::random_lengths(80, 40, 3);
  for (auto& length : shape.lengths) length = std::max<std::int32_t>(length, 1);
  shape.window = 3;
  const TokenCorpus corpus(shape.lengths);
  auto loader = stoke::testing::planned_loader(shape, corpus, 2);
  const std::size_t total = loader.batcher().epoch_batches(0);
  ASSERT_GT(total, 6u);
  auto slice = loader.slice(2, 5);
  std::vector<std::size_t> planned;
  for (auto& batch : slice.iter()) planned.push_back(batch.indices.at(0));
  EXPECT_EQ(planned, (std::vector<std::size_t>{2, 3, 4}));

  auto range = loader.iter();
  auto it = range.begin();
  EXPECT_EQ(it->indices.at(0), 0u);
  loader.close();
  EXPECT_THROW(
      {
        for (std::size_t k = 0; k < total; ++k) ++it;
      },
      stoke::StateError);

  auto moved = loader;
  moved.set_device(stoke::cpu::Backend::devices(2)[1]);
  moved.set_epoch(0);
  std::size_t count = 0;
  for (auto& batch : moved.iter()) {
    EXPECT_EQ(batch.indices.at(0), count++);
  }
  EXPECT_EQ(count, total);
}

}  // namespace

namespace {

TEST(PlannedLoader, PacksAnEpochOverFourDevicesAndResumesItOnTwo) {
  const TokenCorpus corpus(stoke::testing::random_lengths(200, 300, 9));
  // --8<-- [start:loader]
  using Batcher = stoke::PlannedBatcher<stoke::ConcatPlanner>;
  const Batcher batcher(
      stoke::ConcatPlanner(
          stoke::DocumentLengths(corpus.lengths()),
          {.sequence_length = 128, .shifted = true, .rows_per_batch = 4, .seed = 7}),
      /*pad_id=*/-1);
  stoke::LoaderOptions options;  // batch size 1, no shuffle: the plan sizes and orders
  options.remainder = stoke::Remainder::pad;
  options.num_workers = 2;
  stoke::MultiThreadLoader<TokenCorpus, Batcher, stoke::cpu::Backend> loader(corpus, batcher,
                                                                             options);
  auto devices = stoke::split(loader, stoke::cpu::Backend::devices(4));
  stoke::LoaderState state;
  for (auto& device : devices) {  // each device's first 3 steps (in lockstep, on 4 threads)
    std::size_t steps = 0;
    for (auto& batch : device.iter()) {
      const stoke::PackedBatch& packed = batch.data;  // tokens, positions, segment ids, ...
      EXPECT_EQ(packed.rows, 4u);
      EXPECT_EQ(packed.width, 129u);
      if (++steps == 3) break;
    }
    state = device.state();  // 12 planned batches consumed, and the plan's fingerprint
  }
  EXPECT_EQ(state.consumed, 12u);
  auto resumed =
      stoke::MultiThreadLoader<TokenCorpus, Batcher, stoke::cpu::Backend>(corpus, batcher, options);
  resumed.restore(state);  // the rest of the epoch, on two devices
  auto two = stoke::split(resumed, stoke::cpu::Backend::devices(2));
  // --8<-- [end:loader]
  const std::size_t total = batcher.epoch_batches(0);
  EXPECT_EQ(two[0].num_batches(), (total - 12 + 1) / 2);
  std::vector<std::size_t> planned;
  for (auto& batch : two[1].iter()) planned.push_back(batch.indices.at(0));
  ASSERT_FALSE(planned.empty());
  EXPECT_EQ(planned.front(), 13u);
}

}  // namespace

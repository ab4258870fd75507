// Loader state: small, exact, serialisable, refused when it does not match.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include <stoke/stoke.hpp>

#include "stoke_test_support.hpp"

namespace {

using stoke::cpu::Backend;
using stoke::testing::epoch_items;
using stoke::testing::IotaDataset;
using stoke::testing::ItemsBatcher;

auto resume_builder() {
  return stoke::DataLoaderBuilder<Backend, ItemsBatcher>(ItemsBatcher{}).batch_size(4).shuffle(7);
}

TEST(LoaderState, CountsDeliveredBatchesOfTheEpochInProgress) {
  auto loader = resume_builder().build_batch_loader(IotaDataset{30});
  EXPECT_EQ(loader.state().epoch, 0u);
  EXPECT_EQ(loader.state().consumed, 0u);
  auto range = loader.iter();
  auto it = range.begin();
  EXPECT_EQ(loader.state().consumed, 4u);  // the batch being processed counts
  ++it;
  ++it;
  EXPECT_EQ(loader.state().consumed, 12u);
  EXPECT_EQ(loader.state().epoch, 0u);
}

TEST(LoaderState, AtTheEndOfAnEpochPointsAtTheNextOne) {
  auto loader = resume_builder().build_batch_loader(IotaDataset{30});
  epoch_items(loader);
  EXPECT_EQ(loader.state().epoch, 1u);
  EXPECT_EQ(loader.state().consumed, 0u);
}

TEST(LoaderState, MultithreadLoaderResumesMidEpochExactly) {
  auto loader = resume_builder().num_workers(3).build(IotaDataset{101});
  epoch_items(loader);  // epoch 0
  std::vector<std::size_t> before;
  stoke::LoaderState state;
  for (auto& batch : loader.iter()) {
    before.insert(before.end(), batch.data.items.begin(), batch.data.items.end());
    if (batch.step == 6) {
      state = loader.state();
      break;
    }
  }
  auto unbroken = resume_builder().num_workers(2).build(IotaDataset{101});
  unbroken.set_epoch(1);
  const auto expected = epoch_items(unbroken);
  auto resumed = resume_builder().num_workers(1).build(IotaDataset{101});
  resumed.restore(stoke::parse_loader_state(stoke::to_json(state).dump()));
  auto rest = epoch_items(resumed);
  before.insert(before.end(), rest.begin(), rest.end());
  EXPECT_EQ(before, expected);
  EXPECT_EQ(resumed.epoch(), 2u);
}

TEST(LoaderState, ResumeAtAnEpochBoundaryStartsTheNextEpoch) {
  auto loader = resume_builder().build_batch_loader(IotaDataset{20});
  epoch_items(loader);
  epoch_items(loader);
  auto resumed = resume_builder().build_batch_loader(IotaDataset{20});
  resumed.restore(loader.state());
  auto reference = resume_builder().build_batch_loader(IotaDataset{20});
  reference.set_epoch(2);
  EXPECT_EQ(epoch_items(resumed), epoch_items(reference));
}

TEST(LoaderState, RestoringIsConstantTimeForABillionSamples) {
  // Resuming near the end of a huge epoch reads only the remaining positions.
  auto loader = resume_builder().build_batch_loader(IotaDataset{1'000'000'000});
  stoke::LoaderState state = loader.state();
  state.epoch = 5;
  state.consumed = 1'000'000'000 - 6;
  loader.restore(state);
  EXPECT_EQ(loader.num_items(), 6u);
  EXPECT_EQ(epoch_items(loader).size(), 6u);
}

TEST(LoaderState, RefusesAStateOfAnotherDatasetSize) {
  auto loader = resume_builder().build_batch_loader(IotaDataset{20});
  auto state = loader.state();
  auto other = resume_builder().build_batch_loader(IotaDataset{21});
  try {
    other.restore(state);
    FAIL() << "expected an InputError";
  } catch (const stoke::InputError& error) {
    EXPECT_THAT(error.what(), ::testing::HasSubstr("dataset size 20, this loader has 21"));
  }
}

TEST(LoaderState, RefusesAStateOfAnotherSeed) {
  auto state = resume_builder().build_batch_loader(IotaDataset{20}).state();
  auto other = resume_builder().shuffle(8).build_batch_loader(IotaDataset{20});
  EXPECT_THAT([&] { other.restore(state); },
              ::testing::ThrowsMessage<stoke::InputError>(::testing::HasSubstr("seed 7")));
}

TEST(LoaderState, RefusesCorruptJsonNamingTheProblem) {
  EXPECT_THAT([] { (void)stoke::parse_loader_state("{\"seed\": 1,"); },
              ::testing::ThrowsMessage<stoke::InputError>(::testing::HasSubstr("not valid JSON")));
  EXPECT_THAT(
      [] { (void)stoke::parse_loader_state(R"({"format": "stoke.loader_state.v2", "seed": 1})"); },
      ::testing::ThrowsMessage<stoke::InputError>(::testing::HasSubstr("no field \"epoch\"")));
  EXPECT_THAT(
      [] {
        (void)stoke::parse_loader_state(
            R"({"format": "stoke.loader_state.v2", "seed": 1, "epoch": -3, "consumed": 0,
                "dataset_size": 5, "shuffle": true, "shard_aware": false})");
      },
      ::testing::ThrowsMessage<stoke::InputError>(::testing::HasSubstr("\"epoch\" is not")));
  EXPECT_THAT([] { (void)stoke::parse_loader_state(R"({"format": "other"})"); },
              ::testing::ThrowsMessage<stoke::InputError>(::testing::HasSubstr("format")));
}

TEST(LoaderState, RecordsTheRemainderPolicyAndRefusesAnother) {
  auto padded = resume_builder().batch_size(4).pad().build_batch_loader(IotaDataset{10});
  const stoke::LoaderState state = padded.state();
  EXPECT_EQ(state.remainder, stoke::Remainder::pad);
  EXPECT_EQ(stoke::parse_loader_state(stoke::to_json(state).dump()), state);
  auto dropping = resume_builder().batch_size(4).drop_last().build_batch_loader(IotaDataset{10});
  EXPECT_THAT([&] { dropping.restore(state); },
              ::testing::ThrowsMessage<stoke::InputError>(
                  ::testing::HasSubstr("saved with remainder pad, this loader has drop")));
  EXPECT_THAT(
      [] {
        (void)stoke::parse_loader_state(
            R"({"format": "stoke.loader_state.v2", "seed": 1, "epoch": 0, "consumed": 0,
                "dataset_size": 5, "shuffle": true, "shard_aware": false, "remainder": "wrap"})");
      },
      ::testing::ThrowsMessage<stoke::InputError>(
          ::testing::HasSubstr("\"remainder\" is not \"partial\", \"drop\" or \"pad\": \"wrap\"")));
}

TEST(LoaderState, ValuesNestedDeepOrBeyondDoubleRangeAreRefusedCleanly) {
  // A value nested 100,000 deep is described, not printed (printing it recursively overflowed
  // the stack).
  const std::string deep = std::string(100'000, '[') + std::string(100'000, ']');
  EXPECT_THAT(
      [&] {
        (void)stoke::parse_loader_state(R"({"format": "stoke.loader_state.v2", "seed": )" + deep +
                                        "}");
      },
      ::testing::ThrowsMessage<stoke::InputError>(
          ::testing::HasSubstr("\"seed\" is not a non-negative integer: an array of 1 elements")));
  // A number beyond double's range is stoke's error, naming what it read.
  EXPECT_THAT(
      [] {
        (void)stoke::parse_loader_state(R"({"format": "stoke.loader_state.v2", "seed": 1e400})");
      },
      ::testing::ThrowsMessage<stoke::InputError>(
          ::testing::HasSubstr("loader state is not valid JSON")));
  // A string is quoted in part.
  EXPECT_THAT(
      [] { (void)stoke::parse_loader_state(R"({"format": ")" + std::string(1000, 'x') + R"("})"); },
      ::testing::ThrowsMessage<stoke::InputError>(::testing::HasSubstr("xxx...")));
}

TEST(LoaderState, IsRefusedForASlice) {
  auto loader = resume_builder().build_batch_loader(IotaDataset{20});
  EXPECT_THROW((void)loader.slice(0, 10).state(), stoke::UsageError);
}

TEST(LoaderState, SplitStateRefusesPartsOutOfLockstep) {
  auto loader = resume_builder().pad().build_batch_loader(IotaDataset{40});
  auto parts = stoke::split(loader, Backend::devices(2));
  auto range = parts[0].iter();
  (void)range.begin();
  EXPECT_THROW((void)stoke::split_state(parts), stoke::StateError);
  auto other = parts[1].iter();
  (void)other.begin();
  EXPECT_EQ(stoke::split_state(parts).consumed, 8u);
}

TEST(LoaderState, ElasticResumeFromTwoDevicesOntoThreeSeesEverySampleOnce) {
  auto loader = resume_builder().pad().build_batch_loader(IotaDataset{103});
  auto parts = stoke::split(loader, Backend::devices(2));
  std::vector<std::size_t> seen;
  std::vector<stoke::BatchRange<decltype(parts)::value_type::batch_type>> ranges;
  for (auto& part : parts) {
    ranges.push_back(part.iter());
    auto it = ranges.back().begin();
    for (int step = 0;;) {
      seen.insert(seen.end(), it->indices.begin(), it->indices.end());
      if (++step == 5) break;  // five batches delivered: do not pull a sixth
      ++it;
    }
  }
  const auto state = stoke::split_state(parts);
  EXPECT_EQ(state.consumed, 5u * 2u * 4u);
  auto fresh = resume_builder().pad().build_batch_loader(IotaDataset{103});
  fresh.restore(state);
  for (auto& part : stoke::split(fresh, Backend::devices(3))) {
    for (auto& batch : part.iter()) {
      seen.insert(seen.end(), batch.indices.begin(), batch.indices.begin() + batch.real_size());
    }
  }
  std::sort(seen.begin(), seen.end());
  std::vector<std::size_t> all(103);
  std::iota(all.begin(), all.end(), 0);
  EXPECT_EQ(seen, all);
}

/// What a part delivered in an epoch: every batch's step, dataset indices and padding.
struct Delivered {
  std::size_t step = 0;
  std::vector<std::size_t> indices;
  std::size_t padding = 0;
  bool operator==(const Delivered&) const = default;
};

TEST(LoaderState, AnExactResumeOfAPaddedSplitEpochDeliversTheUninterruptedBatches) {
  // 23 samples in batches of 4 on 2 devices: 3 rounds of 8 positions, the last one padded.
  auto unbroken = resume_builder().pad().build_batch_loader(IotaDataset{23});
  std::vector<std::vector<Delivered>> expected;
  for (auto& part : stoke::split(unbroken, Backend::devices(2))) {
    auto& batches = expected.emplace_back();
    for (auto& batch : part.iter()) batches.push_back({batch.step, batch.indices, batch.padding});
  }
  ASSERT_EQ(expected[0].size(), 3u);
  ASSERT_EQ(expected[0][2].padding + expected[1][2].padding, 1u);

  auto loader = resume_builder().pad().build_batch_loader(IotaDataset{23});
  auto parts = stoke::split(loader, Backend::devices(2));
  std::vector<stoke::BatchRange<decltype(parts)::value_type::batch_type>> ranges;
  for (auto& part : parts) {
    ranges.push_back(part.iter());
    auto it = ranges.back().begin();
    ++it;  // two batches delivered
  }
  auto resumed = resume_builder().pad().build_batch_loader(IotaDataset{23});
  resumed.restore(stoke::split_state(parts));
  auto resumed_parts = stoke::split(resumed, Backend::devices(2));
  for (std::size_t d = 0; d < 2; ++d) {
    std::vector<Delivered> rest;
    for (auto& batch : resumed_parts[d].iter()) {
      rest.push_back({batch.step, batch.indices, batch.padding});
    }
    EXPECT_EQ(rest, std::vector<Delivered>(expected[d].begin() + 2, expected[d].end()))
        << "device " << d;
  }
}

TEST(LoaderState, AfterAnElasticResumeStepsCountTheWholeRoundsConsumedBefore) {
  auto loader = resume_builder().pad().build_batch_loader(IotaDataset{103});
  auto parts = stoke::split(loader, Backend::devices(2));
  std::vector<stoke::BatchRange<decltype(parts)::value_type::batch_type>> ranges;
  for (auto& part : parts) {
    ranges.push_back(part.iter());
    auto it = ranges.back().begin();
    for (int step = 1; step < 5; ++step) ++it;  // five batches of 4 on each device
  }
  auto fresh = resume_builder().pad().build_batch_loader(IotaDataset{103});
  fresh.restore(stoke::split_state(parts));  // 40 positions consumed
  for (auto& part : stoke::split(fresh, Backend::devices(3))) {
    auto range = part.iter();
    EXPECT_EQ(range.begin()->step, 3u);  // 40 / (3 devices x 4): three whole rounds
  }
}

}  // namespace

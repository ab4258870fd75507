// A copied loader never silently replays an epoch: a copy starts at its source's epoch, so a
// loader copied once per epoch would load epoch 0 every time (what examples/multi_gpu did).
// Beginning an epoch that the loader or a copy of it already began throws, unless set_epoch
// or restore chose it.
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

auto loader(std::size_t workers) {
  return stoke::DataLoaderBuilder<Backend, ItemsBatcher>({})
      .shuffle(5)
      .batch_size(4)
      .num_workers(workers)
      .drop_last()
      .build(IotaDataset{64});
}

class CopiedLoaders : public ::testing::TestWithParam<std::size_t> {};

TEST_P(CopiedLoaders, ACopyMadeForEachEpochRefusesToReplayEpochZero) {
  auto parts = stoke::split(loader(GetParam()), Backend::devices(2));
  for (std::size_t epoch = 0; epoch < 2; ++epoch) {
    auto part = parts[1];  // a copy per epoch: starts at epoch 0 every time
    if (epoch == 0) {
      EXPECT_FALSE(epoch_items(part).empty());
      continue;
    }
    try {
      (void)epoch_items(part);
      FAIL() << "the copy made for epoch 1 loaded epoch 0 again without a word";
    } catch (const stoke::Error& error) {
      const std::string what = error.what();
      EXPECT_NE(what.find("would load epoch 0 again"), std::string::npos) << what;
      EXPECT_NE(what.find("set_epoch(0)"), std::string::npos) << what;
    }
  }
}

TEST_P(CopiedLoaders, OneLoaderKeptAcrossEpochsLoadsANewOrderEachEpoch) {
  auto parts = stoke::split(loader(GetParam()), Backend::devices(2));
  const auto first = epoch_items(parts[0]);
  const auto second = epoch_items(parts[0]);
  EXPECT_EQ(first.size(), second.size());
  EXPECT_NE(first, second);
  EXPECT_FALSE(epoch_items(parts[1]).empty());  // each part is a loader of its own
}

TEST_P(CopiedLoaders, SetEpochOnACopyLoadsThatEpochAgainOnPurpose) {
  auto original = loader(GetParam());
  const auto epoch0 = epoch_items(original);
  const auto epoch1 = epoch_items(original);
  auto copy = original;  // at epoch 2
  copy.set_epoch(0);
  EXPECT_EQ(epoch_items(copy), epoch0);
  EXPECT_EQ(epoch_items(copy), epoch1);  // then on from there: epoch 1 again, still chosen
}

TEST_P(CopiedLoaders, RestoreChoosesTheEpochItResumes) {
  auto original = loader(GetParam());
  (void)epoch_items(original);
  const auto state = original.state();  // epoch 1, nothing consumed
  auto again = original;
  again.restore(stoke::LoaderState{state.seed, 0, 0, state.dataset_size, state.shuffle,
                                   state.shard_aware, state.remainder});
  EXPECT_FALSE(epoch_items(again).empty());
}

TEST_P(CopiedLoaders, CopiesThatContinueTheSequenceAreAccepted) {
  auto original = loader(GetParam());
  (void)epoch_items(original);
  auto copy = original;  // at epoch 1, which nobody began
  EXPECT_EQ(copy.epoch(), 1u);
  EXPECT_FALSE(epoch_items(copy).empty());
  EXPECT_THROW((void)epoch_items(original), stoke::Error);  // epoch 1 was begun by the copy
}

INSTANTIATE_TEST_SUITE_P(Workers, CopiedLoaders, ::testing::Values(0, 2),
                         [](const auto& info) { return "workers" + std::to_string(info.param); });

}  // namespace

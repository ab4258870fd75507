// prefetch_to_device gives a TrainingLoader: it forwards layout, set_epoch and restore to the
// loader it wraps, and its state() is where the consumer stands, not where the prefetch
// thread got to, so a run checkpointed through prefetch resumes exactly. Checked on the
// delayed test backend (a copy engine that finishes each upload only once it is waited for), with
// and without loader workers and on split shares. Labelled `loader`: TSan and ASan run it.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <string>
#include <vector>

#include <stoke/data/prefetch.hpp>
#include <stoke/data/training_loader.hpp>
#include <stoke/stoke.hpp>

#include "delayed_backend.hpp"
#include "stoke_test_support.hpp"

namespace {

namespace delayed = stoke::testing::delayed;
using stoke::testing::IotaDataset;

/// Host batches of dataset indices (what the prefetcher uploads).
struct IndexBatcher {
  template <class Device>
  std::vector<std::size_t> batch(std::vector<std::size_t> items, const Device&) const {
    return items;
  }
};

auto host_loader(std::size_t workers) {
  return stoke::DataLoaderBuilder<delayed::Backend, IndexBatcher>({})
      .batch_size(4)
      .shuffle(11)
      .num_workers(workers)
      .drop_last()
      .build(IotaDataset{80});
}

using HostLoader = decltype(host_loader(0));
using Prefetched = stoke::PrefetchLoader<delayed::Backend, HostLoader>;
static_assert(stoke::TrainingLoader<HostLoader>);
static_assert(stoke::TrainingLoader<Prefetched>);

/// The dataset indices of the batches of one epoch of `loader`, stopping after `stop_after`
/// batches; `state` is set to `loader.state()` inside the loop body of the last one taken.
template <class Loader>
std::vector<std::size_t> take(Loader& loader, std::size_t stop_after, stoke::LoaderState* state) {
  std::vector<std::size_t> out;
  std::size_t taken = 0;
  for (auto& batch : loader.iter()) {
    out.insert(out.end(), batch.indices.begin(), batch.indices.end());
    if (state != nullptr) *state = loader.state();
    if (++taken == stop_after) break;
  }
  return out;
}

class PrefetchTraining : public ::testing::TestWithParam<std::size_t> {
 protected:
  void SetUp() override { delayed::settings() = delayed::Settings{}; }
  void TearDown() override { delayed::settings() = delayed::Settings{}; }
};

TEST_P(PrefetchTraining, StateInTheLoopCountsTheBatchesTakenNotThosePulledAhead) {
  auto plain = host_loader(GetParam());
  auto prefetched = stoke::prefetch_to_device<delayed::Backend>(host_loader(GetParam()), 4);
  (void)take(plain, 0, nullptr);  // a whole epoch first: the state is of epoch 1
  (void)take(prefetched, 0, nullptr);
  stoke::LoaderState want, got;
  const auto plain_items = take(plain, 3, &want);
  const auto prefetched_items = take(prefetched, 3, &got);
  EXPECT_EQ(prefetched_items, plain_items);
  EXPECT_EQ(got, want);
  EXPECT_EQ(got.epoch, 1u);
  EXPECT_EQ(got.consumed, 12u);         // 3 batches of 4, whatever the prefetcher pulled
  EXPECT_EQ(prefetched.state(), want);  // after the range is dropped, too
}

TEST_P(PrefetchTraining, ResumingFromThatStateGivesTheRestOfTheEpochExactly) {
  auto first = stoke::prefetch_to_device<delayed::Backend>(host_loader(GetParam()), 3);
  stoke::LoaderState state;
  const auto before = take(first, 5, &state);
  auto second = stoke::prefetch_to_device<delayed::Backend>(host_loader(GetParam()), 3);
  second.restore(state);
  const auto after = take(second, 0, nullptr);
  auto reference = host_loader(0);
  const auto whole = take(reference, 0, nullptr);
  std::vector<std::size_t> joined = before;
  joined.insert(joined.end(), after.begin(), after.end());
  EXPECT_EQ(joined, whole);
}

TEST_P(PrefetchTraining, AfterAWholeEpochTheStateIsTheNextEpochsStart) {
  auto prefetched = stoke::prefetch_to_device<delayed::Backend>(host_loader(GetParam()), 2);
  (void)take(prefetched, 0, nullptr);
  const stoke::LoaderState state = prefetched.state();
  EXPECT_EQ(state.epoch, 1u);
  EXPECT_EQ(state.consumed, 0u);
}

TEST_P(PrefetchTraining, SplitSharesResumeOnAnotherNumberOfShares) {
  auto loader = stoke::prefetch_to_device<delayed::Backend>(host_loader(GetParam()), 2);
  auto two = stoke::split(loader, std::vector<delayed::Device>{{0}, {1}});
  std::vector<std::size_t> seen;
  stoke::LoaderState state;
  for (auto& part : two) {  // two batches from each part: positions 0 .. 15
    const auto items = take(part, 2, &state);
    seen.insert(seen.end(), items.begin(), items.end());
  }
  EXPECT_EQ(state.consumed, 16u);
  loader.restore(state);
  for (auto& part : stoke::split(loader, std::vector<delayed::Device>{{0}, {1}, {2}})) {
    const auto items = take(part, 0, nullptr);
    seen.insert(seen.end(), items.begin(), items.end());
  }
  // 16 positions before the stop; the other 64 over three parts of 5 batches of 4 each
  // (4 positions dropped for equal batch counts): 76 samples, none twice.
  std::sort(seen.begin(), seen.end());
  for (std::size_t i = 1; i < seen.size(); ++i) ASSERT_NE(seen[i], seen[i - 1]) << "twice";
  EXPECT_EQ(seen.size(), 76u);
}

TEST_P(PrefetchTraining, SetEpochAndLayoutAreTheInnerLoaders) {
  auto plain = host_loader(GetParam());
  auto prefetched = stoke::prefetch_to_device<delayed::Backend>(host_loader(GetParam()), 2);
  plain.set_epoch(3);
  prefetched.set_epoch(3);
  EXPECT_EQ(prefetched.layout(3).num_batches, plain.layout(3).num_batches);
  EXPECT_EQ(take(prefetched, 0, nullptr), take(plain, 0, nullptr));
}

INSTANTIATE_TEST_SUITE_P(Workers, PrefetchTraining, ::testing::Values(0, 2),
                         [](const auto& info) { return "workers" + std::to_string(info.param); });

}  // namespace

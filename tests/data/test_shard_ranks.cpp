// The shard rank split: every rank takes whole shards, dealt anew every epoch; exactly once,
// equal batch counts on every device of every rank, exact and elastic resume.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <map>
#include <numeric>
#include <random>
#include <set>
#include <string>
#include <vector>

#include <stoke/stoke.hpp>

#include "stoke_test_support.hpp"

namespace {

using stoke::cpu::Backend;
using stoke::testing::ItemsBatcher;
using ::testing::HasSubstr;

/// `get(i) == i` over shards of the given sizes.
struct ShardedIota {
  std::vector<std::size_t> begins;
  std::size_t count = 0;
  explicit ShardedIota(const std::vector<std::size_t>& sizes) {
    for (const std::size_t size : sizes) {
      begins.push_back(count);
      count += size;
    }
  }
  [[nodiscard]] std::size_t size() const { return count; }
  [[nodiscard]] std::size_t get(std::size_t i) const { return i; }
  [[nodiscard]] const std::vector<std::size_t>& shard_begins() const { return begins; }
  [[nodiscard]] std::size_t shard_of(std::size_t i) const {
    return static_cast<std::size_t>(std::upper_bound(begins.begin(), begins.end(), i) -
                                    begins.begin()) -
           1;
  }
};

using Loader = stoke::BatchLoader<ShardedIota, ItemsBatcher, Backend>;

Loader make_loader(const ShardedIota& data, std::size_t batch, stoke::Remainder remainder,
                   std::uint64_t seed = 5) {
  return stoke::DataLoaderBuilder<Backend, ItemsBatcher>({})
      .batch_size(batch)
      .shuffle_shards(seed)
      .remainder(remainder)
      .build_batch_loader(data);
}

/// The loaders of `ranks` ranks of `devices` devices each (rank-major).
std::vector<std::vector<Loader>> rank_devices(const Loader& loader, std::size_t ranks,
                                              std::size_t devices) {
  std::vector<std::vector<Loader>> out;
  for (std::size_t r = 0; r < ranks; ++r) {
    out.push_back(stoke::split(stoke::rank_share(loader, r, ranks, stoke::RankSplit::by_shards),
                               Backend::devices(devices)));
  }
  return out;
}

/// What one epoch (or its rest) gave every device: its real items per batch, and its batches.
struct Epoch {
  std::vector<std::vector<std::vector<std::size_t>>> real;  ///< [rank*devices+d][batch]
  std::vector<std::size_t> padding;                         ///< per device
};

/// Runs every device's epoch in lockstep for at most `steps` steps.
Epoch run(std::vector<std::vector<Loader>>& loaders, std::size_t steps = SIZE_MAX) {
  Epoch out;
  for (auto& rank : loaders) {
    for (auto& device : rank) {
      auto& batches = out.real.emplace_back();
      std::size_t padding = 0;
      std::size_t step = 0;
      if (steps == 0) {
        out.padding.push_back(0);
        continue;
      }
      for (auto& batch : device.iter()) {
        const auto& items = batch.data.items;
        batches.emplace_back(items.begin(), items.end() - static_cast<long>(batch.padding));
        padding += batch.padding;
        if (++step == steps) break;  // the state, taken now, counts this batch
      }
      out.padding.push_back(padding);
    }
  }
  return out;
}

std::vector<std::size_t> all_items(const Epoch& epoch) {
  std::vector<std::size_t> out;
  for (const auto& device : epoch.real) {
    for (const auto& batch : device) out.insert(out.end(), batch.begin(), batch.end());
  }
  std::sort(out.begin(), out.end());
  return out;
}

TEST(ShardAssignment, DealsShardsInVisitOrderToTheRankWithFewestSamples) {
  const stoke::ShardAssignment assignment(
      {{0, 0, 10}, {1, 10, 5}, {2, 15, 0}, {3, 15, 8}, {4, 23, 3}}, 2);
  const auto shards = [&](std::size_t rank) {
    std::vector<std::size_t> out;
    for (const auto& run : assignment.runs(rank)) out.push_back(run.shard);
    return out;
  };
  EXPECT_EQ(shards(0), (std::vector<std::size_t>{0, 4}));  // 10, then 3 (13 < ... 13: rank 0)
  EXPECT_EQ(shards(1), (std::vector<std::size_t>{1, 3}));  // 5, then 8
  EXPECT_EQ(assignment.length(0), 13U);
  EXPECT_EQ(assignment.length(1), 13U);
}

TEST(ShardRanks, EveryShardGoesToOneRankAndEverySampleOnceWithEqualBatchCounts) {
  std::mt19937 random(11);
  for (int trial = 0; trial < 150; ++trial) {
    const std::size_t ranks = 1 + random() % 4;
    const std::size_t shards = ranks + random() % 6;
    std::vector<std::size_t> sizes;
    for (std::size_t s = 0; s < shards; ++s) sizes.push_back(1 + random() % 30);
    const ShardedIota data(sizes);
    const std::size_t devices = 1 + random() % 3;
    const std::size_t batch = 1 + random() % 6;
    const auto remainder = random() % 2 ? stoke::Remainder::pad : stoke::Remainder::drop;
    const auto loader = make_loader(data, batch, remainder, random());
    auto loaders = rank_devices(loader, ranks, devices);
    for (int epoch = 0; epoch < 2; ++epoch) {
      const std::string where =
          "trial " + std::to_string(trial) + " epoch " + std::to_string(epoch);
      const Epoch got = run(loaders);
      const std::size_t batches = got.real.front().size();
      std::map<std::size_t, std::size_t> rank_of_shard;
      for (std::size_t k = 0; k < got.real.size(); ++k) {
        ASSERT_EQ(got.real[k].size(), batches) << where << ": unequal batch counts";
        for (const auto& b : got.real[k]) {
          for (const std::size_t item : b) {
            const auto [it, fresh] = rank_of_shard.emplace(data.shard_of(item), k / devices);
            ASSERT_EQ(it->second, k / devices) << where << ": shard read by two ranks";
          }
        }
      }
      const auto items = all_items(got);
      ASSERT_TRUE(std::adjacent_find(items.begin(), items.end()) == items.end())
          << where << ": a sample twice";
      if (remainder == stoke::Remainder::pad) {
        ASSERT_EQ(items.size(), data.size()) << where << ": a sample missing";
      } else {
        std::size_t dropped = 0;
        for (std::size_t r = 0; r < ranks; ++r) dropped = loaders[r][0].layout(epoch).dropped;
        ASSERT_EQ(items.size() + dropped, data.size()) << where << ": dropped miscounted";
      }
    }
  }
}

TEST(ShardRanks, WorkerThreadsDoNotChangeARanksBatches) {
  const ShardedIota data({17, 9, 23, 12, 30, 8});
  const auto reference = rank_devices(make_loader(data, 4, stoke::Remainder::pad), 2, 2);
  auto caller = reference;
  const Epoch expected = run(caller);
  for (const std::size_t workers : {1U, 3U}) {
    const auto threaded = stoke::DataLoaderBuilder<Backend, ItemsBatcher>({})
                              .batch_size(4)
                              .shuffle_shards(5)
                              .pad()
                              .num_workers(workers)
                              .build(data);
    for (std::size_t r = 0; r < 2; ++r) {
      auto devices = stoke::split(threaded.share_by_shards(2, r), Backend::devices(2));
      for (std::size_t d = 0; d < 2; ++d) {
        std::vector<std::vector<std::size_t>> got;
        for (auto& batch : devices[d].iter()) {
          const auto& items = batch.data.items;
          got.emplace_back(items.begin(), items.end() - static_cast<long>(batch.padding));
        }
        EXPECT_EQ(got, expected.real[r * 2 + d]) << workers << " workers, rank " << r;
      }
    }
  }
}

TEST(ShardRanks, TheShardsOfARankAreDealtAnewEveryEpoch) {
  const ShardedIota data(std::vector<std::size_t>(12, 10));
  auto loaders = rank_devices(make_loader(data, 4, stoke::Remainder::pad), 3, 1);
  std::set<std::vector<std::size_t>> seen;
  for (int epoch = 0; epoch < 4; ++epoch) {
    const Epoch got = run(loaders);
    std::set<std::size_t> shards;
    for (const auto& b : got.real[0]) {
      for (const std::size_t item : b) shards.insert(data.shard_of(item));
    }
    EXPECT_EQ(shards.size(), 4U) << "12 equal shards over 3 ranks";
    seen.insert(std::vector<std::size_t>(shards.begin(), shards.end()));
  }
  EXPECT_GT(seen.size(), 1U) << "rank 0 read the same shards every epoch";
}

TEST(ShardRanks, AResumeOntoTheSameRanksGivesTheUninterruptedBatches) {
  const ShardedIota data({17, 9, 23, 12, 30, 8});
  const auto loader = make_loader(data, 3, stoke::Remainder::pad);
  auto whole = rank_devices(loader, 2, 2);
  const Epoch uninterrupted = run(whole);

  auto first = rank_devices(loader, 2, 2);
  const Epoch before = run(first, 4);
  const stoke::LoaderState state = stoke::split_state(first[0]);
  EXPECT_EQ(state, stoke::split_state(first[1])) << "every rank records the same state";
  EXPECT_EQ(state.shard_ranks, 2U);
  EXPECT_EQ(state.rank_consumed, 4U * 3U * 2U);
  auto resumed = rank_devices(loader, 2, 2);
  for (auto& rank : resumed) {
    for (auto& device : rank) device.restore(stoke::parse_loader_state(to_json(state).dump()));
  }
  const Epoch after = run(resumed);
  for (std::size_t k = 0; k < uninterrupted.real.size(); ++k) {
    std::vector<std::vector<std::size_t>> joined = before.real[k];
    joined.insert(joined.end(), after.real[k].begin(), after.real[k].end());
    EXPECT_EQ(joined, uninterrupted.real[k]) << "device " << k;
  }
}

TEST(ShardRanks, AResumeOntoOtherRanksAndDevicesSeesEverySampleOnce) {
  const ShardedIota data({17, 9, 23, 12, 30, 8, 14});
  for (const auto& [ranks, devices] : {std::pair{1U, 3U}, std::pair{3U, 2U}, std::pair{4U, 1U}}) {
    const auto loader = make_loader(data, 3, stoke::Remainder::pad);
    auto first = rank_devices(loader, 2, 2);
    const Epoch before = run(first, 3);
    const stoke::LoaderState state = stoke::split_state(first[0]);
    auto resumed = rank_devices(loader, ranks, devices);
    for (auto& rank : resumed) {
      for (auto& device : rank) device.restore(state);
    }
    const Epoch after = run(resumed);
    for (const auto& device : after.real) {
      EXPECT_EQ(device.size(), after.real.front().size()) << "unequal batch counts";
    }
    std::vector<std::size_t> items = all_items(before);
    const std::vector<std::size_t> rest = all_items(after);
    items.insert(items.end(), rest.begin(), rest.end());
    std::sort(items.begin(), items.end());
    std::vector<std::size_t> expected(data.size());
    std::iota(expected.begin(), expected.end(), 0);
    EXPECT_EQ(items, expected) << ranks << " ranks of " << devices << " devices";

    // Interrupted again, the leftovers resume onto yet another shape.
    auto again = rank_devices(loader, ranks, devices);
    for (auto& rank : again) {
      for (auto& device : rank) device.restore(state);
    }
    const Epoch part = run(again, 1);
    const stoke::LoaderState second = stoke::split_state(again[0]);
    auto last = rank_devices(loader, 2, 1);
    for (auto& rank : last) {
      for (auto& device : rank) device.restore(second);
    }
    items = all_items(before);
    for (const auto& epoch : {part, run(last)}) {
      const auto got = all_items(epoch);
      items.insert(items.end(), got.begin(), got.end());
    }
    std::sort(items.begin(), items.end());
    EXPECT_EQ(items, expected) << "twice interrupted, via " << ranks << "x" << devices;
  }
}

TEST(ShardRanks, AnInterleavedStateResumesIntoTheShardSplitSeeingEverySampleOnce) {
  const ShardedIota data({17, 9, 23, 12, 30, 8, 14});
  const auto loader = make_loader(data, 3, stoke::Remainder::pad);
  std::vector<std::vector<Loader>> interleaved;
  for (std::size_t r = 0; r < 2; ++r) {
    interleaved.push_back(stoke::split(stoke::rank_share(loader, r, 2), Backend::devices(2)));
  }
  const Epoch before = run(interleaved, 5);
  const stoke::LoaderState state = stoke::split_state(interleaved[0]);
  EXPECT_EQ(state.shard_ranks, 0U);
  auto resumed = rank_devices(loader, 3, 1);
  for (auto& rank : resumed) {
    for (auto& device : rank) device.restore(state);
  }
  std::vector<std::size_t> items = all_items(before);
  const std::vector<std::size_t> rest = all_items(run(resumed));
  items.insert(items.end(), rest.begin(), rest.end());
  std::sort(items.begin(), items.end());
  std::vector<std::size_t> expected(data.size());
  std::iota(expected.begin(), expected.end(), 0);
  EXPECT_EQ(items, expected);
}

TEST(ShardRanks, RefusesWhatItCannotDoNamingTheReason) {
  const ShardedIota data({10, 10});
  const auto plain = stoke::DataLoaderBuilder<Backend, ItemsBatcher>({})
                         .batch_size(2)
                         .shuffle(1)
                         .pad()
                         .build_batch_loader(data);
  EXPECT_THAT([&] { (void)plain.share_by_shards(2, 0); },
              ::testing::ThrowsMessage<stoke::UsageError>(HasSubstr("shuffle_shards")));
  auto three = make_loader(data, 2, stoke::Remainder::pad).share_by_shards(3, 0);
  EXPECT_THAT([&] { (void)three.num_batches(); },
              ::testing::ThrowsMessage<stoke::UsageError>(HasSubstr("3 ranks need")));
  auto sharded = make_loader(data, 2, stoke::Remainder::pad).share_by_shards(2, 0);
  for (auto& batch : sharded.iter()) {
    (void)batch;
    break;
  }
  auto interleaved = make_loader(data, 2, stoke::Remainder::pad).share(2, 0);
  EXPECT_THAT([&] { interleaved.restore(sharded.state()); },
              ::testing::ThrowsMessage<stoke::InputError>(HasSubstr("shard rank split")));
}

TEST(ShardRanks, StatesOfVersion2StillLoad) {
  const stoke::LoaderState state = stoke::parse_loader_state(
      R"({"format":"stoke.loader_state.v2","seed":1,"epoch":2,"consumed":5,"dataset_size":9,)"
      R"("shuffle":true,"shard_aware":true,"remainder":"pad"})");
  EXPECT_EQ(state.consumed, 5U);
  EXPECT_EQ(state.shard_ranks, 0U);
  const stoke::LoaderState v3{
      .seed = 1, .epoch = 2, .dataset_size = 9, .shard_ranks = 3, .rank_consumed = 4};
  EXPECT_EQ(stoke::parse_loader_state(to_json(v3).dump()), v3);
}

}  // namespace

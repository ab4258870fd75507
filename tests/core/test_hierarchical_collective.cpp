// HierarchicalCollective and LaneGroups: the lanes' collective's grouping, leaders, summation
// order and hand-over between threads, on host memory with an engine of host loops (the CUDA
// backend's engine queues the same steps as kernels, copies and NCCL). Labelled `loader`, so
// TSan runs it.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <exception>
#include <functional>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <stoke/core/hierarchical_collective.hpp>
#include <stoke/core/lane_groups.hpp>
#include <stoke/core/shared_memory_collective.hpp>

#include "test_sync.hpp"

namespace {

using stoke::HierarchicalCollective;
using stoke::LaneGroups;
using stoke::ParameterShard;
using stoke::testing::on_threads;
using Values = std::span<float>;

/// The steps of `HierarchicalCollective` as host loops; the leaders sum across groups through
/// a `SharedMemoryCollective` (leader `g` its participant `g`). `fail_copies` makes every copy
/// throw.
struct HostEngine {
  std::shared_ptr<stoke::SharedMemoryCollective> across;
  bool fail_copies = false;

  void check(std::size_t, const Values&) const {}
  [[nodiscard]] std::size_t floats(const Values& values) const { return values.size(); }
  void begin(std::size_t, std::span<Values* const>) const {}
  void sum_in_order(std::size_t, std::span<Values* const> members) const {
    for (std::size_t i = 1; i < members.size(); ++i) {
      for (std::size_t j = 0; j < members[0]->size(); ++j) (*members[0])[j] += (*members[i])[j];
    }
  }
  void copy(std::size_t, const Values& from, Values& to, ParameterShard range) const {
    if (fail_copies) throw std::runtime_error("the engine failed a copy");
    std::copy(from.begin() + static_cast<std::ptrdiff_t>(range.begin),
              from.begin() + static_cast<std::ptrdiff_t>(range.end),
              to.begin() + static_cast<std::ptrdiff_t>(range.begin));
  }
  void zero(std::size_t, Values& values, ParameterShard range) const {
    std::fill(values.begin() + static_cast<std::ptrdiff_t>(range.begin),
              values.begin() + static_cast<std::ptrdiff_t>(range.end), 0.0f);
  }
  void across_groups(std::size_t g, Values& values) const { across->all_reduce_sum(g, values); }
  void end(std::size_t, std::span<Values* const>) const {}
  void abort() const { across->abort(); }
};

/// A collective over participants keyed `keys` (their GPUs).
std::unique_ptr<HierarchicalCollective<HostEngine>> collective_over(const std::vector<int>& keys,
                                                                    bool fail_copies = false) {
  LaneGroups groups(keys);
  auto across = std::make_shared<stoke::SharedMemoryCollective>(groups.groups());
  return std::make_unique<HierarchicalCollective<HostEngine>>(std::move(groups),
                                                              HostEngine{across, fail_copies});
}

/// Participant `p`'s values: magnitudes far apart, so that the order of a sum shows in its bits.
std::vector<float> values_of(std::size_t p, std::size_t length) {
  std::vector<float> values(length);
  const float scale[] = {1e8f, 1.0f, -1e8f, 0.5f, 3e-3f};
  for (std::size_t i = 0; i < length; ++i) {
    values[i] =
        scale[p % 5] * (1.0f + static_cast<float>(i) * 0.125f) + 0.1f * static_cast<float>(p);
  }
  return values;
}

/// Every participant's values after `sum` ran on each, one thread a participant.
template <class Sum>
std::vector<std::vector<float>> summed(std::size_t participants, std::size_t length, Sum sum) {
  std::vector<std::vector<float>> out(participants);
  for (std::size_t p = 0; p < participants; ++p) out[p] = values_of(p, length);
  const auto errors = on_threads(participants, [&](std::size_t p) {
    std::span<float> mine(out[p]);
    sum(p, mine);
  });
  for (const std::string& error : errors) EXPECT_EQ(error, "");
  return out;
}

TEST(LaneGroups, GroupsParticipantsByGpuInParticipantOrderLedByTheFirst) {
  // Five devices on two GPUs, laid round-robin: cuda:0, cuda:1, cuda:0.1, cuda:1.1, cuda:0.2.
  const LaneGroups groups(std::vector<int>{0, 1, 0, 1, 0});
  EXPECT_EQ(groups.participants(), 5u);
  ASSERT_EQ(groups.groups(), 2u);
  EXPECT_THAT(groups.members(0), ::testing::ElementsAre(0, 2, 4));
  EXPECT_THAT(groups.members(1), ::testing::ElementsAre(1, 3));
  EXPECT_EQ(groups.leader(0), 0u);
  EXPECT_EQ(groups.leader(1), 1u);
  EXPECT_EQ(groups.group_of(3), 1u);
  EXPECT_EQ(groups.position(4), 2u);
  EXPECT_TRUE(groups.leads(1));
  EXPECT_FALSE(groups.leads(2));
  EXPECT_EQ(groups.largest_group(), 3u);
}

TEST(LaneGroups, NumbersGroupsInTheOrderOfTheirLeaders) {
  struct Gpu {
    int ordinal;
  };
  const auto groups =
      LaneGroups::of(std::vector<Gpu>{{3}, {3}, {1}}, [](const Gpu& gpu) { return gpu.ordinal; });
  ASSERT_EQ(groups.groups(), 2u);
  EXPECT_THAT(groups.members(0), ::testing::ElementsAre(0, 1));
  EXPECT_THAT(groups.members(1), ::testing::ElementsAre(2));
  EXPECT_THROW(LaneGroups(std::vector<int>{}), stoke::UsageError);
}

TEST(HierarchicalCollective, LanesOfOneGpuSumBitForBitAsTheSharedMemoryCollective) {
  for (const std::size_t lanes : {2u, 3u, 5u}) {
    const std::size_t length = 257;
    auto lanes_collective = collective_over(std::vector<int>(lanes, 0));
    const auto by_lanes = summed(lanes, length, [&](std::size_t p, std::span<float>& mine) {
      lanes_collective->all_reduce_sum(p, mine);
    });
    stoke::SharedMemoryCollective reference(lanes);
    const auto by_reference = summed(lanes, length, [&](std::size_t p, std::span<float>& mine) {
      reference.all_reduce_sum(p, mine);
    });
    for (std::size_t p = 0; p < lanes; ++p) {
      EXPECT_EQ(by_lanes[p], by_reference[0]) << lanes << " lanes, participant " << p;
    }
  }
}

TEST(HierarchicalCollective, GroupsSumInMemberOrderThenAcrossLeaders) {
  const std::vector<int> keys{0, 1, 0, 1, 0};
  const std::size_t length = 64;
  auto collective = collective_over(keys);
  const auto result = summed(keys.size(), length, [&](std::size_t p, std::span<float>& mine) {
    collective->all_reduce_sum(p, mine);
  });
  std::vector<float> expected(length);
  for (std::size_t i = 0; i < length; ++i) {
    const float gpu0 =
        (values_of(0, length)[i] + values_of(2, length)[i]) + values_of(4, length)[i];
    const float gpu1 = values_of(1, length)[i] + values_of(3, length)[i];
    expected[i] = gpu0 + gpu1;
  }
  for (std::size_t p = 0; p < keys.size(); ++p)
    EXPECT_EQ(result[p], expected) << "participant " << p;
}

TEST(HierarchicalCollective, AllGatherGivesEveryParticipantEveryShardExactly) {
  for (const std::vector<int>& keys :
       {std::vector<int>{0, 0, 0}, std::vector<int>{0, 1, 0}, std::vector<int>{0, 1, 0, 1}}) {
    const std::size_t parts = keys.size();
    for (const std::size_t length : {4 * parts, 4 * parts + 1, parts - 1, std::size_t{0}}) {
      auto collective = collective_over(keys);
      std::vector<std::vector<float>> gathered(parts, std::vector<float>(length, -1.0f));
      const auto errors = on_threads(parts, [&](std::size_t p) {
        const ParameterShard own = stoke::parameter_shard(length, p, parts);
        for (std::size_t i = own.begin; i < own.end; ++i) gathered[p][i] = 10.0f * p + i + 0.5f;
        std::span<float> mine(gathered[p]);
        collective->all_gather(p, mine);
      });
      for (const std::string& error : errors) EXPECT_EQ(error, "");
      std::vector<float> expected(length);
      for (std::size_t p = 0; p < parts; ++p) {
        const ParameterShard shard = stoke::parameter_shard(length, p, parts);
        for (std::size_t i = shard.begin; i < shard.end; ++i) expected[i] = 10.0f * p + i + 0.5f;
      }
      for (std::size_t p = 0; p < parts; ++p) {
        EXPECT_EQ(gathered[p], expected) << parts << " participants, " << length << " floats";
      }
    }
  }
}

TEST(HierarchicalCollective, RepeatedCallsKeepTheirOrderPerParticipant) {
  auto collective = collective_over({0, 0, 0});
  std::vector<std::vector<float>> values(3, std::vector<float>(8, 1.0f));
  const auto errors = on_threads(3, [&](std::size_t p) {
    std::span<float> mine(values[p]);
    for (int call = 0; call < 200; ++call) collective->all_reduce_sum(p, mine);
  });
  for (const std::string& error : errors) EXPECT_EQ(error, "");
  // 3^200 overflows to infinity; every participant saw the same calls.
  for (std::size_t p = 1; p < 3; ++p) EXPECT_EQ(values[p], values[0]);
}

TEST(HierarchicalCollective, LengthsThatDifferFailEveryParticipant) {
  auto collective = collective_over({0, 0, 1});
  std::vector<std::vector<float>> values{std::vector<float>(4), std::vector<float>(5),
                                         std::vector<float>(4)};
  const auto errors = on_threads(3, [&](std::size_t p) {
    std::span<float> mine(values[p]);
    collective->all_reduce_sum(p, mine);
  });
  EXPECT_THAT(errors[0], ::testing::HasSubstr("participant 1 has 5 values"));
  EXPECT_THAT(errors[1], ::testing::HasSubstr("participant 1 has 5 values"));
  EXPECT_NE(errors[2], "");  // woken by the abort, in its own group
}

TEST(HierarchicalCollective, AnEngineFailureReachesEveryMemberAndLaterCalls) {
  auto collective = collective_over({0, 0}, /*fail_copies=*/true);
  std::vector<std::vector<float>> values(2, std::vector<float>(4, 1.0f));
  const auto errors = on_threads(2, [&](std::size_t p) {
    std::span<float> mine(values[p]);
    collective->all_reduce_sum(p, mine);
  });
  EXPECT_THAT(errors, ::testing::Each(::testing::HasSubstr("the engine failed a copy")));
  std::span<float> mine(values[0]);
  EXPECT_THROW(collective->all_reduce_sum(0, mine), std::runtime_error);
}

TEST(HierarchicalCollective, AbortWakesAMemberWaitingForItsLeader) {
  auto collective = collective_over({0, 0});
  std::vector<float> values(4, 1.0f);
  std::thread waiting([&] {
    std::span<float> mine(values);
    EXPECT_THROW(collective->all_reduce_sum(1, mine), stoke::Error);
  });
  collective->abort();
  waiting.join();
  std::span<float> mine(values);
  EXPECT_THROW(collective->all_reduce_sum(0, mine), stoke::Error);
  EXPECT_THROW(collective->all_reduce_sum(2, mine), stoke::UsageError);
}

}  // namespace

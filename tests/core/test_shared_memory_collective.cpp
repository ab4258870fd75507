// The CPU backend's shared-memory collective: all_reduce_sum and all_gather between threads,
// their summation order, their refusals, and abort. Labelled `loader`, so TSan runs it.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstddef>
#include <exception>
#include <functional>
#include <future>
#include <latch>
#include <span>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <stoke/stoke.hpp>

#include "test_sync.hpp"

namespace {

using stoke::SharedMemoryCollective;
using stoke::testing::on_threads;

/// The buffer of `participant`: `length` values that differ per participant and element,
/// with magnitudes far apart so that the order of summation changes the bits.
std::vector<float> values_of(std::size_t participant, std::size_t length) {
  std::vector<float> values(length);
  const float scale[] = {1e8f, 1.0f, -1e8f, 0.5f};
  for (std::size_t i = 0; i < length; ++i) {
    values[i] = scale[participant % 4] + static_cast<float>(i) * 0.25f;
  }
  return values;
}

/// A collective with only the required operations, so `stoke::all_gather` falls back.
struct SumOnly {
  SharedMemoryCollective inner;
  std::size_t size() const { return inner.size(); }
  void all_reduce_sum(std::size_t participant, std::span<float> values) {
    inner.all_reduce_sum(participant, values);
  }
  void abort() { inner.abort(); }
};
static_assert(stoke::Collective<SumOnly>);

TEST(SharedMemoryCollective, SumsInParticipantOrderIntoEveryBuffer) {
  constexpr std::size_t participants = 4, length = 4099;  // not a multiple of 4 or 1024
  SharedMemoryCollective collective(participants);
  std::vector<std::vector<float>> buffers;
  for (std::size_t p = 0; p < participants; ++p) buffers.push_back(values_of(p, length));
  const auto errors =
      on_threads(participants, [&](std::size_t p) { collective.all_reduce_sum(p, buffers[p]); });
  EXPECT_THAT(errors, testing::Each(""));
  for (std::size_t i = 0; i < length; ++i) {
    float expected = values_of(0, length)[i];
    for (std::size_t p = 1; p < participants; ++p) expected += values_of(p, length)[i];
    for (std::size_t p = 0; p < participants; ++p) {
      ASSERT_EQ(buffers[p][i], expected) << "participant " << p << ", element " << i;
    }
  }
}

TEST(SharedMemoryCollective, AllGatherGivesEveryParticipantEveryShard) {
  constexpr std::size_t participants = 3, length = 7;
  SharedMemoryCollective collective(participants);
  // Participant p holds 100 * p + i in its own shard and garbage elsewhere.
  std::vector<std::vector<float>> buffers(participants, std::vector<float>(length, -1.0f));
  for (std::size_t p = 0; p < participants; ++p) {
    const stoke::ParameterShard own = stoke::parameter_shard(length, p, participants);
    for (std::size_t i = own.begin; i < own.end; ++i) buffers[p][i] = 100.0f * p + i;
  }
  const auto errors =
      on_threads(participants, [&](std::size_t p) { collective.all_gather(p, buffers[p]); });
  EXPECT_THAT(errors, testing::Each(""));
  const std::vector<float> expected{0, 1, 102, 103, 204, 205, 206};
  for (std::size_t p = 0; p < participants; ++p) EXPECT_EQ(buffers[p], expected) << p;
}

TEST(SharedMemoryCollective, TheFallbackAllGatherGivesTheSameBits) {
  constexpr std::size_t participants = 2, length = 1001;
  SharedMemoryCollective native(participants);
  SumOnly fallback{SharedMemoryCollective(participants)};
  std::vector<std::vector<float>> a, b;
  for (std::size_t p = 0; p < participants; ++p) {
    a.push_back(values_of(p + 1, length));
    b.push_back(values_of(p + 1, length));
  }
  const auto errors = on_threads(participants, [&](std::size_t p) {
    stoke::all_gather(native, p, a[p]);
    stoke::all_gather(fallback, p, b[p]);
  });
  EXPECT_THAT(errors, testing::Each(""));
  EXPECT_EQ(a, b);
  EXPECT_EQ(a[0], a[1]);
  EXPECT_EQ(a[0][0], values_of(1, length)[0]);
  EXPECT_EQ(a[0][length - 1], values_of(2, length)[length - 1]);
}

TEST(SharedMemoryCollective, ManyRoundsReuseTheBarrierCorrectly) {
  constexpr std::size_t participants = 3, rounds = 2000;
  SharedMemoryCollective collective(participants);
  std::vector<float> totals(participants);
  const auto errors = on_threads(participants, [&](std::size_t p) {
    for (std::size_t round = 0; round < rounds; ++round) {
      std::vector<float> values{static_cast<float>(p + round), 1.0f};
      collective.all_reduce_sum(p, values);
      if (values[1] != participants) throw std::runtime_error("wrong count");
      collective.all_gather(p, values);
      totals[p] += values[0];
    }
  });
  EXPECT_THAT(errors, testing::Each(""));
  // Round r sums to 3r + 3; the gathered first element is that sum (it is shard 0's).
  const float expected = 3.0f * (rounds * (rounds - 1) / 2) + 3.0f * rounds;
  EXPECT_THAT(totals, testing::Each(expected));
}

TEST(SharedMemoryCollective, DifferentLengthsAreRefusedByEveryParticipant) {
  SharedMemoryCollective collective(2);
  std::vector<float> three(3), five(5);
  const auto errors = on_threads(2, [&](std::size_t p) {
    collective.all_reduce_sum(p, p == 0 ? std::span<float>(three) : std::span<float>(five));
  });
  EXPECT_THAT(errors,
              testing::Each(testing::HasSubstr("participant 1 has 5 values, participant 0 has 3")));
}

TEST(SharedMemoryCollective, AbortWakesAWaitingParticipant) {
  SharedMemoryCollective collective(2);
  std::latch calling(1);        // participant 0 is about to wait for participant 1
  std::promise<void> returned;  // participant 0 came back
  std::future<void> came_back = returned.get_future();
  const auto errors = on_threads(2, [&](std::size_t p) {
    if (p == 1) {
      calling.wait();
      // Participant 0 waits in the collective, where nothing outside it shows: it cannot come
      // back before the abort, and is given 20 ms to show otherwise (the wait ends if it does).
      (void)came_back.wait_for(std::chrono::milliseconds(20));
      collective.abort();
      return;
    }
    struct Back {
      std::promise<void>& returned;
      ~Back() { returned.set_value(); }
    } back{returned};
    std::vector<float> values(4);
    calling.count_down();
    collective.all_reduce_sum(0, values);  // participant 1 never comes
  });
  EXPECT_THAT(errors[0], testing::HasSubstr("aborted by another participant"));
  std::vector<float> values(4);
  EXPECT_THROW(collective.all_gather(0, values), stoke::Error);
}

TEST(SharedMemoryCollective, RefusesAParticipantOutsideIt) {
  SharedMemoryCollective collective(2);
  std::vector<float> values(2);
  EXPECT_THROW(collective.all_reduce_sum(2, values), stoke::UsageError);
  EXPECT_THROW(collective.all_gather(5, values), stoke::UsageError);
}

}  // namespace

// The in-process group (threads as ranks), the collective across ranks, the agreement check
// and run_rank, without MPI.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <stoke/dist/agreement.hpp>
#include <stoke/dist/group_collective.hpp>
#include <stoke/dist/in_process_group.hpp>
#include <stoke/dist/run_rank.hpp>

#include "toy_data.hpp"

namespace {

using stoke::dist::InProcessGroup;
using stoke::dist::run_in_process_group;
using ::testing::HasSubstr;

static_assert(stoke::ProcessGroup<InProcessGroup>);
static_assert(
    stoke::Collective<stoke::dist::GroupCollective<stoke::SharedMemoryCollective, InProcessGroup>>);

/// Runs `fn(group)` on `ranks` threads and collects every rank's error message ("" if none).
template <class F>
std::vector<std::string> errors_of_every_rank(std::size_t ranks, F fn) {
  std::vector<std::string> errors(ranks);
  run_in_process_group(ranks, [&](InProcessGroup& group) {
    try {
      fn(group);
    } catch (const std::exception& error) {
      errors[group.rank()] = error.what();
    }
  });
  return errors;
}

TEST(InProcessGroup, AllReduceSumsOverEveryRankInEveryType) {
  run_in_process_group(3, [](InProcessGroup& group) {
    const auto r = static_cast<float>(group.rank());
    for (int round = 0; round < 20; ++round) {
      std::vector<float> floats{r, 1.0f, 0.5f * r};
      group.all_reduce_sum(std::span(floats));
      EXPECT_EQ(floats, (std::vector<float>{3.0f, 3.0f, 1.5f}));
      std::vector<double> doubles{r + 0.25};
      group.all_reduce_sum(std::span(doubles));
      EXPECT_EQ(doubles[0], 3.75);
      std::vector<std::uint64_t> counts{group.rank() + 1, 1u << 20};
      group.all_reduce_sum(std::span(counts));
      EXPECT_EQ(counts, (std::vector<std::uint64_t>{6, 3u << 20}));
    }
  });
}

TEST(InProcessGroup, BroadcastCopiesTheRootsBytesToEveryRank) {
  run_in_process_group(4, [](InProcessGroup& group) {
    std::uint64_t value = 100 + group.rank();
    stoke::dist::broadcast_value(group, value, 2);
    EXPECT_EQ(value, 102u);
    EXPECT_EQ(group.local_rank(), group.rank());
    EXPECT_EQ(group.local_size(), 4u);
  });
}

TEST(InProcessGroup, MismatchedLengthsThrowOnEveryRank) {
  const auto errors = errors_of_every_rank(3, [](InProcessGroup& group) {
    std::vector<float> values(group.rank() == 2 ? 5 : 4, 1.0f);
    group.all_reduce_sum(std::span(values));
  });
  for (const auto& error : errors) EXPECT_THAT(error, HasSubstr("rank 2 has 5 elements"));
}

TEST(InProcessGroup, AbortWakesEveryWaitingRankWithTheReason) {
  const auto errors = errors_of_every_rank(4, [](InProcessGroup& group) {
    if (group.rank() == 3) group.abort("disk full");
    group.barrier();
  });
  for (const auto& error : errors) EXPECT_THAT(error, HasSubstr("rank 3 of 4: disk full"));
}

TEST(InProcessGroup, ARankThatThrowsFreesTheOthersAndItsErrorIsRethrown) {
  std::atomic<std::size_t> woken = 0;
  EXPECT_THAT(
      [&] {
        run_in_process_group(3, [&](InProcessGroup& group) {
          if (group.rank() == 1) throw std::runtime_error("rank 1 is broken");
          try {
            group.barrier();
          } catch (const stoke::dist::GroupAbortedError&) {
            ++woken;
            throw;
          }
        });
      },
      ::testing::ThrowsMessage<std::runtime_error>(HasSubstr("rank 1 is broken")));
  EXPECT_EQ(woken.load(), 2u);
}

TEST(RunRank, ReturnsTheExitCodeOfTheWork) {
  run_in_process_group(2, [](InProcessGroup& group) {
    EXPECT_EQ(stoke::dist::run_rank(group, [] {}), 0);
    EXPECT_EQ(stoke::dist::run_rank(group, [] { return 3; }), 3);
  });
}

TEST(RunRank, AGroupErrorOnEveryRankReturnsOneWithoutAborting) {
  run_in_process_group(2, [](InProcessGroup& group) {
    const int code =
        stoke::dist::run_rank(group, [] { throw stoke::dist::GroupError("every rank saw it"); });
    EXPECT_EQ(code, 1);
    group.barrier();  // the group still works
  });
}

TEST(RunRank, AnErrorOnOneRankAbortsTheGroupWithItsReason) {
  const auto errors = errors_of_every_rank(3, [](InProcessGroup& group) {
    (void)stoke::dist::run_rank(group, [&] {
      if (group.rank() == 0) throw std::runtime_error("out of memory");
      group.barrier();
    });
  });
  for (const auto& error : errors) EXPECT_THAT(error, HasSubstr("rank 0 of 3: out of memory"));
}

TEST(Agreement, RanksThatSplitTheSameLoaderAgree) {
  run_in_process_group(3, [](InProcessGroup& group) {
    const stoke::testing::ToyImages data(100);
    EXPECT_NO_THROW(
        stoke::dist::check_agreement(group, stoke::testing::toy_train_loader(data, 8, 7)));
  });
}

TEST(Agreement, EveryRankRefusesARankWithAnotherDatasetSizeNamingBothValues) {
  const auto errors = errors_of_every_rank(3, [](InProcessGroup& group) {
    const stoke::testing::ToyImages data(group.rank() == 1 ? 60001 : 60000);
    stoke::dist::check_agreement(group, stoke::testing::toy_train_loader(data, 8, 7));
  });
  for (const auto& error : errors) {
    EXPECT_THAT(error, HasSubstr("rank 1 has dataset size 60001, rank 0 has 60000"));
  }
}

TEST(Agreement, NamesEveryMismatchOfEveryRank) {
  const auto errors = errors_of_every_rank(3, [](InProcessGroup& group) {
    const stoke::testing::ToyImages data(100);
    auto builder = stoke::DataLoaderBuilder<stoke::cpu::Backend, stoke::cpu::ImageBatcher>({})
                       .batch_size(8)
                       .shuffle(group.rank() == 2 ? 8 : 7);
    if (group.rank() == 1)
      builder.pad();
    else
      builder.drop_last();
    auto loader = builder.build(data);
    if (group.rank() == 2) (void)loader.iter();  // rank 2 is one epoch ahead
    stoke::dist::check_agreement(group, loader);
  });
  for (const auto& error : errors) {
    EXPECT_THAT(error, HasSubstr("rank 1 has remainder pad, rank 0 has drop"));
    EXPECT_THAT(error, HasSubstr("rank 2 has seed 8, rank 0 has 7"));
    EXPECT_THAT(error, HasSubstr("rank 2 has epoch 1, rank 0 has 0"));
  }
}

TEST(GroupCollective, EveryParticipantOfEveryRankGetsTheGlobalSum) {
  constexpr std::size_t kRanks = 3, kDevices = 2;
  run_in_process_group(kRanks, [&](InProcessGroup& group) {
    auto make = stoke::dist::make_group_collective_factory(group);
    stoke::AnyCollective collective = make(kDevices);
    EXPECT_EQ(collective.size(), kDevices);
    std::vector<std::thread> devices;
    std::mutex mutex;
    std::vector<std::vector<float>> results;
    for (std::size_t d = 0; d < kDevices; ++d) {
      devices.emplace_back([&, d] {
        for (int round = 0; round < 10; ++round) {
          const auto id = static_cast<float>(group.rank() * kDevices + d);
          std::vector<float> values{1.0f, id, static_cast<float>(round)};
          collective.all_reduce_sum(d, values);
          std::lock_guard lock(mutex);
          results.push_back(values);
        }
      });
    }
    for (auto& device : devices) device.join();
    for (std::size_t k = 0; k < results.size(); ++k) {
      EXPECT_EQ(results[k][0], 6.0f);
      EXPECT_EQ(results[k][1], 15.0f);  // 0 + 1 + ... + 5
    }
  });
}

TEST(GroupCollective, AbortWakesTheLocalParticipants) {
  run_in_process_group(1, [](InProcessGroup& group) {
    auto collective = stoke::dist::make_group_collective_factory(group)(2);
    std::thread waiting([&] {
      std::vector<float> values(3, 1.0f);
      EXPECT_THROW(collective.all_reduce_sum(1, values), stoke::Error);
    });
    collective.abort();
    waiting.join();
  });
}

TEST(GroupCollective, RanksOfDevicesTrainLikeOneDeviceWithTheGlobalBatch) {
  constexpr std::size_t kRanks = 2, kDevices = 2, kBatch = 4;
  const stoke::testing::ToyImages train(640), valid(100, 9);
  const auto loader = stoke::testing::toy_train_loader(train, kBatch, 5);
  const auto valid_loader = stoke::testing::toy_valid_loader(valid);
  std::vector<std::vector<float>> losses(kRanks);
  run_in_process_group(kRanks, [&](InProcessGroup& group) {
    auto learner = stoke::testing::toy_learner(
        kDevices,
        {.epochs = 2, .make_collective = stoke::dist::make_group_collective_factory(group)});
    losses[group.rank()] = learner
                               .fit(stoke::rank_share(loader, group.rank(), kRanks),
                                    stoke::rank_share(valid_loader, group.rank(), kRanks))
                               .step_losses;
  });
  auto single = stoke::testing::toy_learner(1, {.epochs = 2});
  const auto reference = single.fit(
      stoke::testing::toy_train_loader(train, kRanks * kDevices * kBatch, 5), valid_loader);
  ASSERT_EQ(losses[0].size(), 2 * 640 / (kRanks * kDevices * kBatch));
  EXPECT_EQ(losses[0], losses[1]);  // bit for bit on every rank
  EXPECT_TRUE(stoke::testing::near_all(losses[0], reference.step_losses, 1e-4f));
}

}  // namespace

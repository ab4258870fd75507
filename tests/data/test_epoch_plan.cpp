// EpochPlan: which positions each loader reads; slices and interleaved parts, with the remainder
// dropped, padded or kept.
#include <gtest/gtest.h>

#include <cstddef>
#include <map>
#include <vector>

#include <stoke/data/epoch_plan.hpp>

namespace {

using stoke::EpochPlan;
using stoke::Remainder;

/// The epoch positions a plan reads in `epoch`, in order (padding included).
std::vector<std::size_t> read_positions(const EpochPlan& plan, std::size_t epoch = 0) {
  const auto layout = plan.layout(epoch);
  std::vector<std::size_t> out;
  for (std::size_t q = 0; q < layout.length; ++q) out.push_back(plan.locate(layout, q));
  return out;
}

std::vector<std::size_t> iota(std::size_t begin, std::size_t end) {
  std::vector<std::size_t> out;
  for (std::size_t i = begin; i < end; ++i) out.push_back(i);
  return out;
}

TEST(EpochPlan, PartialKeepsASmallerLastBatch) {
  const EpochPlan plan(10, 4, Remainder::partial);
  const auto layout = plan.layout(0);
  EXPECT_EQ(layout.num_batches, 3u);
  EXPECT_EQ(layout.length, 10u);
  EXPECT_EQ(layout.padding, 0u);
  EXPECT_EQ(read_positions(plan), iota(0, 10));
}

TEST(EpochPlan, DropReportsTheDroppedSamples) {
  const EpochPlan plan(10, 4, Remainder::drop);
  const auto layout = plan.layout(0);
  EXPECT_EQ(layout.num_batches, 2u);
  EXPECT_EQ(layout.dropped, 2u);
  EXPECT_EQ(read_positions(plan), iota(0, 8));
}

TEST(EpochPlan, PadWrapsAroundAndMarksTheTailAsPadding) {
  const EpochPlan plan(10, 4, Remainder::pad);
  const auto layout = plan.layout(0);
  EXPECT_EQ(layout.num_batches, 3u);
  EXPECT_EQ(layout.padding, 2u);
  EXPECT_EQ(layout.pad_from, 10u);
  EXPECT_EQ(read_positions(plan), (std::vector<std::size_t>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 0, 1}));
}

TEST(EpochPlan, SliceReadsPositionsOfTheParentSequence) {
  EpochPlan plan(10, 3, Remainder::partial);
  plan.add_slice(2, 7);
  EXPECT_EQ(read_positions(plan), iota(2, 7));
  plan.add_slice(1, 100);  // a slice of a slice, clamped to its parent
  EXPECT_EQ(read_positions(plan), iota(3, 7));
}

TEST(EpochPlan, SliceWithEndBeforeBeginIsRefused) {
  EpochPlan plan(10, 3, Remainder::partial);
  EXPECT_THROW(plan.add_slice(5, 4), stoke::UsageError);
}

TEST(EpochPlan, PartTakesEveryCountthBatch) {
  EpochPlan plan(12, 2, Remainder::drop);
  plan.add_share(3, 1);
  EXPECT_EQ(read_positions(plan), (std::vector<std::size_t>{2, 3, 8, 9}));
}

TEST(EpochPlan, SplittingAPartialLoaderIsRefusedWithTheReason) {
  EpochPlan plan(12, 2, Remainder::partial);
  try {
    plan.add_share(2, 0);
    FAIL() << "expected an exception";
  } catch (const stoke::UsageError& error) {
    EXPECT_NE(std::string(error.what()).find("Remainder::drop or Remainder::pad"),
              std::string::npos);
  }
}

TEST(EpochPlan, PartIndexOutOfRangeIsRefused) {
  EpochPlan plan(12, 2, Remainder::pad);
  EXPECT_THROW(plan.add_share(2, 2), stoke::UsageError);
  EXPECT_THROW(plan.add_share(0, 0), stoke::UsageError);
}

// Exhaustive over small shapes: parts have equal batch counts, padding is a suffix of each
// part and is exactly what the layout reports, and the parts cover every position exactly once
// (pad) or at most once with the reported number dropped (drop).
TEST(EpochPlan, PartsCoverEveryPositionOnceWithEqualBatchCounts) {
  for (const Remainder remainder : {Remainder::drop, Remainder::pad}) {
    for (std::size_t n = 0; n <= 40; ++n) {
      for (std::size_t b = 1; b <= 5; ++b) {
        for (std::size_t k = 1; k <= 5; ++k) {
          std::map<std::size_t, int> real_reads;
          std::size_t batches = 0;
          std::size_t dropped = 0;
          for (std::size_t j = 0; j < k; ++j) {
            EpochPlan plan(n, b, remainder);
            plan.add_share(k, j);
            const auto layout = plan.layout(0);
            if (j == 0) batches = layout.num_batches;
            ASSERT_EQ(layout.num_batches, batches) << "n=" << n << " b=" << b << " k=" << k;
            ASSERT_EQ(layout.length, layout.num_batches * b);
            dropped = layout.dropped;
            for (std::size_t q = 0; q < layout.length; ++q) {
              const std::size_t position = plan.locate(layout, q);
              ASSERT_LT(position, n);
              if (q < layout.pad_from) ++real_reads[position];
            }
          }
          const std::size_t read = real_reads.size();
          for (const auto& [position, times] : real_reads) ASSERT_EQ(times, 1) << position;
          if (remainder == Remainder::pad) {
            ASSERT_EQ(read, n) << "n=" << n << " b=" << b << " k=" << k;
          } else {
            ASSERT_EQ(read + dropped, n) << "n=" << n << " b=" << b << " k=" << k;
            ASSERT_LT(dropped, b * k);
          }
        }
      }
    }
  }
}

TEST(EpochPlan, PaddedPositionsRepeatRealOnes) {
  EpochPlan plan(5, 2, Remainder::pad);
  plan.add_share(2, 1);
  const auto layout = plan.layout(0);
  // Parent batches: [0 1] [2 3] [4 0'] [1' 2']: part 1 takes batches 1 and 3.
  EXPECT_EQ(read_positions(plan), (std::vector<std::size_t>{2, 3, 1, 2}));
  EXPECT_EQ(layout.padding, 2u);
  EXPECT_EQ(layout.pad_from, 2u);
}

TEST(EpochPlan, TwoPartsInARowEqualOneFlatPart) {
  for (std::size_t ranks = 1; ranks <= 3; ++ranks) {
    for (std::size_t devices = 1; devices <= 3; ++devices) {
      for (std::size_t r = 0; r < ranks; ++r) {
        for (std::size_t d = 0; d < devices; ++d) {
          EpochPlan nested(50, 3, Remainder::pad);
          nested.add_share(ranks, r);
          nested.add_share(devices, d);
          EpochPlan flat(50, 3, Remainder::pad);
          flat.add_share(ranks * devices, r + ranks * d);
          ASSERT_EQ(read_positions(nested), read_positions(flat));
          ASSERT_EQ(nested.share_count(), ranks * devices);
        }
      }
    }
  }
}

TEST(EpochPlan, ResumeSkipsTheConsumedPrefixOfThatEpochOnly) {
  EpochPlan plan(10, 2, Remainder::partial);
  plan.resume_at(3, 6);
  EXPECT_EQ(read_positions(plan, 3), iota(6, 10));
  EXPECT_EQ(read_positions(plan, 4), iota(0, 10));
}

TEST(EpochPlan, LocatesARunOfPositionsAsOneAtATime) {
  EpochPlan plain(10, 4, Remainder::pad);
  EpochPlan resumed(10, 4, Remainder::drop);
  resumed.resume_at(0, 3);
  EpochPlan split(23, 4, Remainder::pad);
  split.add_slice(1, 22);
  split.add_share(2, 1);
  for (const EpochPlan* plan : {&plain, &resumed, &split}) {
    const auto layout = plan->layout(0);
    for (std::size_t first = 0; first < layout.length; ++first) {
      std::vector<std::size_t> run(layout.length - first);
      plan->locate(layout, first, run);
      for (std::size_t i = 0; i < run.size(); ++i) {
        ASSERT_EQ(run[i], plan->locate(layout, first + i)) << "first " << first << ", i " << i;
      }
    }
  }
}

TEST(EpochPlan, EmptyDatasetHasNoBatches) {
  for (const Remainder remainder : {Remainder::partial, Remainder::drop, Remainder::pad}) {
    EpochPlan plan(0, 4, remainder);
    EXPECT_EQ(plan.layout(0).num_batches, 0u);
    if (remainder != Remainder::partial) {
      plan.add_share(3, 2);
      EXPECT_EQ(plan.layout(0).num_batches, 0u);
    }
  }
}

TEST(EpochPlan, BatchSizeZeroIsRefused) {
  EXPECT_THROW(EpochPlan(10, 0, Remainder::pad), stoke::UsageError);
}

}  // namespace

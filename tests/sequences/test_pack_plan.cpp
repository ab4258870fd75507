// Packing plans: concatenate-then-split and first-fit / best-fit of whole documents, per plan
// window. Every token of every document is the input of exactly one row per epoch, rows hold at
// most S tokens, and the packed tensors (segment ids, positions, cu_seqlens, loss mask) agree
// with the documents.
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include <stoke/stoke.hpp>

#include "token_corpus.hpp"

namespace {

using stoke::testing::packed_disagreement;
using stoke::testing::random_lengths;
using stoke::testing::TokenCorpus;
using stoke::testing::TokenUses;
using stoke::testing::whole_plan;

/// Checks one epoch of a packing plan: tokens once, rows within `capacity`, tensors agree.
template <class P>
void expect_packed_epoch(const P& planner, const TokenCorpus& corpus, std::size_t epoch,
                         std::size_t inputs, std::size_t rows_per_batch,
                         const std::string& context) {
  TokenUses uses(corpus.lengths());
  const auto batches = whole_plan(planner, epoch);
  for (std::size_t b = 0; b < batches.size(); ++b) {
    ASSERT_EQ(batches[b].rows.size(), rows_per_batch) << context << " batch " << b;
    for (const auto& row : batches[b].rows) {
      ASSERT_LE(row.tokens(), batches[b].width) << context << " batch " << b;
    }
    uses.add(batches[b], inputs);
    const auto packed = stoke::make_packed_batch(batches[b], corpus, -1);
    ASSERT_EQ(packed_disagreement(packed, batches[b], -1), "") << context << " batch " << b;
  }
  EXPECT_EQ(uses.first_not_once(), "") << context;
}

TEST(FitPlanner, EveryTokenOnceAndTensorsAgreeOverManyCorpora) {
  for (std::uint64_t seed = 0; seed < 24; ++seed) {
    const std::size_t s = 8 + seed % 5 * 7;
    const TokenCorpus corpus(random_lengths(20 + seed * 13, s * 2, seed));
    for (const auto fit : {stoke::PackFit::first, stoke::PackFit::best}) {
      const stoke::FitOptions options{.sequence_length = s,
                                      .rows_per_batch = 1 + seed % 4,
                                      .window_documents = 1 + seed % 9 * 5,
                                      .shuffle = seed % 3 != 0,
                                      .seed = seed,
                                      .fit = fit};
      const stoke::FitPlanner planner(corpus.lengths(), options);
      const std::string context =
          "seed " + std::to_string(seed) + " fit " + std::to_string(static_cast<int>(fit));
      for (std::size_t epoch = 0; epoch < 2; ++epoch) {
        expect_packed_epoch(planner, corpus, epoch, s, options.rows_per_batch, context);
      }
    }
  }
}

TEST(FitPlanner, WholeDocumentsStayWholeWhenTheyFit) {
  const TokenCorpus corpus(random_lengths(300, 16, 7));
  const stoke::FitPlanner planner(corpus.lengths(),
                                  {.sequence_length = 16, .rows_per_batch = 4, .seed = 3});
  for (const auto& batch : whole_plan(planner, 0)) {
    for (const auto& row : batch.rows) {
      for (const auto& piece : row.pieces) {
        EXPECT_EQ(piece.begin, 0u);
        EXPECT_EQ(piece.end, static_cast<std::size_t>(corpus.lengths()[piece.document]));
      }
    }
  }
}

TEST(FitPlanner, FirstFitTakesTheFirstRowWithRoomBestFitTheTightest) {
  // Rows of 8: 5 opens row 0 (room 3), 6 opens row 1 (room 2); 2 fits both.
  const std::vector<std::int32_t> lengths{5, 6, 2};
  const auto rows_of = [&](stoke::PackFit fit) {
    const stoke::FitPlanner planner(
        lengths, {.sequence_length = 8, .rows_per_batch = 2, .shuffle = false, .fit = fit});
    return whole_plan(planner, 0).front().rows;
  };
  const auto first = rows_of(stoke::PackFit::first);
  const auto best = rows_of(stoke::PackFit::best);
  ASSERT_EQ(first[0].pieces.size(), 2u);
  EXPECT_EQ(first[0].pieces[1].document, 2u);  // 2 joins 5
  ASSERT_EQ(best[1].pieces.size(), 2u);
  EXPECT_EQ(best[1].pieces[1].document, 2u);  // 2 joins 6, the tighter fit
  // A document that fills a row's room exactly goes there.
  const std::vector<std::int32_t> exact{6, 2};
  for (const auto fit : {stoke::PackFit::first, stoke::PackFit::best}) {
    const stoke::FitPlanner planner(
        exact, {.sequence_length = 8, .rows_per_batch = 1, .shuffle = false, .fit = fit});
    EXPECT_EQ(whole_plan(planner, 0).size(), 1u);
  }
}

TEST(FirstFitRows, FindsWhatAScanOfTheRowsFindsAcrossGrowth) {
  // Random rooms, needs and updates over more rows than the tree's first 64 leaves: the tree's
  // answer is the first row (in order of opening) a linear scan finds, or none.
  std::uint64_t state = 12345;
  const auto next = [&](std::size_t bound) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return static_cast<std::size_t>((state >> 33) % bound);
  };
  stoke::detail::FirstFitRows rows;
  std::vector<std::size_t> scan;
  for (std::size_t step = 0; step < 5000; ++step) {
    const std::size_t need = 1 + next(40);
    std::size_t expected = scan.size();
    for (std::size_t r = 0; r < scan.size(); ++r) {
      if (scan[r] >= need) {
        expected = r;
        break;
      }
    }
    ASSERT_EQ(rows.first_with(need), expected) << "step " << step << " need " << need;
    if (expected == scan.size() || next(3) == 0) {
      const std::size_t room = next(41);
      rows.open(room);
      scan.push_back(room);
    } else {
      scan[expected] -= need;
      rows.set(expected, scan[expected]);
    }
    ASSERT_EQ(rows.size(), scan.size());
    ASSERT_EQ(rows.room(scan.size() - 1), scan.back());
  }
  EXPECT_GT(scan.size(), 200u);  // grown several times
}

TEST(FitPlanner, OversizeSplitCutsFullRowsAndRefuseNamesTheDocument) {
  const std::vector<std::int32_t> lengths{3, 20, 4};
  const stoke::FitPlanner split(lengths,
                                {.sequence_length = 8, .rows_per_batch = 8, .shuffle = false});
  const auto rows = whole_plan(split, 0).front().rows;
  EXPECT_EQ(rows[1].pieces.front(), (stoke::DocumentPiece{1, 0, 8}));
  EXPECT_EQ(rows[2].pieces.front(), (stoke::DocumentPiece{1, 8, 16}));
  const stoke::FitPlanner refuse(
      lengths, {.sequence_length = 8, .shuffle = false, .oversize = stoke::Oversize::refuse});
  try {
    (void)refuse.plan_window(0, {});
    FAIL() << "a document longer than a row was packed";
  } catch (const stoke::InputError& error) {
    EXPECT_NE(std::string(error.what()).find("document 1 has 20 tokens"), std::string::npos)
        << error.what();
    EXPECT_NE(std::string(error.what()).find("plan window 0"), std::string::npos);
  }
}

TEST(MakePackedBatch, RefusesAPieceLongerThanItsDocumentAndARowOverItsWidth) {
  const TokenCorpus corpus({3, 5});
  stoke::PlannedBatch too_long{.rows = {stoke::PlannedRow{{{0, 0, 4}}}}, .width = 8};
  EXPECT_THROW((void)stoke::make_packed_batch(too_long, corpus), stoke::InputError);
  stoke::PlannedBatch too_wide{.rows = {stoke::PlannedRow{{{0, 0, 3}, {1, 0, 5}}}}, .width = 7};
  EXPECT_THROW((void)stoke::make_packed_batch(too_wide, corpus), stoke::UsageError);
}

TEST(DocumentLengths, ANegativeLengthNamesTheDocumentWhenRead) {
  const std::vector<std::int32_t> lengths{3, -2};
  const stoke::DocumentLengths read(lengths);
  EXPECT_EQ(read(0), 3u);
  try {
    (void)read(1);
    FAIL() << "a negative length was read";
  } catch (const stoke::InputError& error) {
    EXPECT_NE(std::string(error.what()).find("document 1 has a negative length"),
              std::string::npos);
  }
}

TEST(ConcatPlanner, EveryTokenIsTheInputOfOneRowOverManyCorpora) {
  for (std::uint64_t seed = 0; seed < 24; ++seed) {
    const std::size_t s = 4 + seed % 6 * 5;
    const TokenCorpus corpus(random_lengths(15 + seed * 11, s * 3, seed + 100));
    const stoke::ConcatOptions options{.sequence_length = s,
                                       .shifted = seed % 2 == 1,
                                       .rows_per_batch = 1 + seed % 3,
                                       .window_batches = 1 + seed % 5,
                                       .shuffle = seed % 4 != 0,
                                       .seed = seed};
    const stoke::ConcatPlanner planner(corpus.lengths(), options);
    expect_packed_epoch(planner, corpus, seed % 3, s, options.rows_per_batch,
                        "seed " + std::to_string(seed));
  }
}

TEST(ConcatPlanner, RowsFollowTheEpochOrderAsOneStream) {
  const std::vector<std::int32_t> lengths{3, 0, 5, 2};
  const stoke::ConcatPlanner planner(
      lengths, {.sequence_length = 4, .shifted = true, .rows_per_batch = 2, .shuffle = false});
  const auto batches = whole_plan(planner, 0);
  ASSERT_EQ(batches.size(), 2u);  // 10 tokens: rows of 4 from 0, 4, 8
  EXPECT_EQ(batches[0].width, 5u);
  EXPECT_EQ(batches[0].rows[0].pieces,
            (std::vector<stoke::DocumentPiece>{{0, 0, 3}, {2, 0, 2}}));  // 4 + the target
  EXPECT_EQ(batches[0].rows[1].pieces, (std::vector<stoke::DocumentPiece>{{2, 1, 5}, {3, 0, 1}}));
  EXPECT_EQ(batches[1].rows[0].pieces, (std::vector<stoke::DocumentPiece>{{3, 0, 2}}));
  EXPECT_TRUE(batches[1].rows[1].pieces.empty());  // the last batch's empty row
}

TEST(ConcatPlanner, ShuffledEpochsDifferAndRepeatForTheSameSeed) {
  const TokenCorpus corpus(random_lengths(200, 40, 5));
  const stoke::ConcatPlanner planner(corpus.lengths(), {.sequence_length = 32, .seed = 9});
  const stoke::ConcatPlanner again(corpus.lengths(), {.sequence_length = 32, .seed = 9});
  EXPECT_EQ(whole_plan(planner, 1), whole_plan(again, 1));
  EXPECT_NE(whole_plan(planner, 0), whole_plan(planner, 1));
}

TEST(ConcatPlanner, AWindowIsComputedFromItsStartAlone) {
  const TokenCorpus corpus(random_lengths(500, 60, 8));
  const stoke::ConcatPlanner planner(corpus.lengths(),
                                     {.sequence_length = 16, .window_batches = 3, .seed = 1});
  stoke::WindowStart start{};
  std::vector<stoke::WindowStart> starts;
  for (;;) {
    starts.push_back(start);
    const auto plan = planner.plan_window(2, start);
    if (plan.last) break;
    start = plan.next;
  }
  ASSERT_GT(starts.size(), 10u);
  // Planning window k again from its start alone gives the same batches as the walk did.
  const auto all = whole_plan(planner, 2);
  const auto window = planner.plan_window(2, starts[7]);
  for (std::size_t b = 0; b < window.batches.size(); ++b) {
    EXPECT_EQ(window.batches[b], all[7 * 3 + b]);
  }
}

}  // namespace

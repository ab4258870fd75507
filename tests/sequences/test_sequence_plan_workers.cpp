// The same bits for any number of worker threads: each worker walks the plan on its own (a
// plan is a pure function of seed, epoch, lengths and options) and makes every N-th batch of a
// share; the packed tensors match those one thread makes.
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <thread>
#include <vector>

#include <stoke/stoke.hpp>

#include "token_corpus.hpp"

namespace {

using stoke::testing::random_lengths;
using stoke::testing::TokenCorpus;

/// Share `index` of `count` of epoch `epoch`'s plan, its batches made by `workers` threads.
template <class P>
std::vector<stoke::PackedBatch> made_by_workers(const P& planner, const TokenCorpus& corpus,
                                                std::size_t epoch, std::size_t count,
                                                std::size_t index, std::size_t workers) {
  std::vector<std::vector<std::pair<std::size_t, stoke::PackedBatch>>> made(workers);
  std::vector<std::thread> threads;
  for (std::size_t w = 0; w < workers; ++w) {
    threads.emplace_back([&, w] {
      stoke::PlannedEpoch<P> walk(planner, epoch);
      for (std::size_t t = w;; t += workers) {
        const stoke::PlannedBatch* batch = walk.find(t * count + index);
        if (batch == nullptr) break;
        made[w].emplace_back(t, stoke::make_packed_batch(*batch, corpus, 0));
      }
    });
  }
  for (auto& thread : threads) thread.join();
  std::vector<stoke::PackedBatch> out;
  for (std::size_t t = 0;; ++t) {
    const auto& from = made[t % workers];
    if (t / workers >= from.size()) break;
    EXPECT_EQ(from[t / workers].first, t);
    out.push_back(from[t / workers].second);
  }
  return out;
}

bool same_bits(const stoke::PackedBatch& a, const stoke::PackedBatch& b) {
  return a.rows == b.rows && a.width == b.width && a.tokens == b.tokens &&
         a.segment_ids == b.segment_ids && a.positions == b.positions &&
         a.cu_seqlens == b.cu_seqlens && a.loss_mask == b.loss_mask && a.documents == b.documents;
}

template <class P>
void expect_same_bits_for_any_workers(const P& planner, const TokenCorpus& corpus) {
  for (std::size_t index = 0; index < 3; ++index) {
    const auto one = made_by_workers(planner, corpus, 1, 3, index, 1);
    ASSERT_GT(one.size(), 4u);
    for (const std::size_t workers : {2u, 3u, 4u}) {
      const auto many = made_by_workers(planner, corpus, 1, 3, index, workers);
      ASSERT_EQ(many.size(), one.size()) << workers << " workers";
      for (std::size_t b = 0; b < one.size(); ++b) {
        EXPECT_TRUE(same_bits(many[b], one[b])) << workers << " workers, batch " << b;
      }
    }
  }
}

TEST(SequencePlanWorkers, PackedBatchesHaveTheSameBitsForAnyWorkerCount) {
  const TokenCorpus corpus(random_lengths(600, 48, 31));
  expect_same_bits_for_any_workers(stoke::ConcatPlanner(corpus.lengths(), {.sequence_length = 32,
                                                                           .shifted = true,
                                                                           .rows_per_batch = 2,
                                                                           .window_batches = 5,
                                                                           .seed = 8}),
                                   corpus);
  expect_same_bits_for_any_workers(
      stoke::FitPlanner(corpus.lengths(), {.sequence_length = 48,
                                           .rows_per_batch = 2,
                                           .window_documents = 50,
                                           .seed = 8,
                                           .fit = stoke::PackFit::best}),
      corpus);
  expect_same_bits_for_any_workers(
      stoke::BucketPlanner(corpus.lengths(), {.budget = 128, .window_documents = 70, .seed = 8}),
      corpus);
}

}  // namespace

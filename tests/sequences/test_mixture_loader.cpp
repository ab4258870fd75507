// Property tests of mixtures run by stoke's own multithread loader (MixturePlanner under a
// PlannedBatcher), over random (sources, weights, unit, schedule, exhaustion policy, plan kind,
// devices, ranks, workers, remainder, resume point): the epoch's documents are the mixture's
// picks (in order for concatenation, window by window for whole-document plans), so every
// prefix keeps the weights and every sample is used as they say; equal batch counts on every
// device and rank; the same bits for any worker count; the per-source counts in the state; exact
// and elastic resume.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <map>
#include <random>
#include <string>
#include <vector>

#include <stoke/stoke.hpp>

#include "mixture_loader.hpp"
#include "planned_loader.hpp"
#include "token_corpus.hpp"

namespace {

using stoke::testing::MixtureLoader;
using stoke::testing::MixtureShape;
using stoke::testing::PlanKind;
using stoke::testing::TokenCorpus;

/// The documents of planned batches `[first, last)` of `epoch`, by their first piece (so a
/// document cut over rows or batches counts once, where it begins).
std::vector<std::size_t> begun_documents(const MixtureLoader& loader, std::size_t epoch,
                                         std::size_t first, std::size_t last, bool shifted) {
  std::vector<std::size_t> out;
  for (std::size_t b = first; b < last; ++b) {
    const stoke::PlannedBatch batch = loader.batcher().planned(epoch, b);
    for (const auto& row : batch.rows) {
      std::size_t slot = 0;  // a shifted row's last slot is the next row's first input
      for (const auto& piece : row.pieces) {
        if (piece.begin == 0 && (!shifted || slot + 1 < batch.width)) {
          out.push_back(piece.document);
        }
        slot += piece.size();
      }
    }
  }
  return out;
}

/// Every sample used as the weights say: the epoch's documents are the mixture's picks, in
/// order for concatenation, and as a multiset within every window of positions for the others
/// (whose rows reorder a window). Every prefix of a concatenated epoch is also within one sample
/// per source of the weights in force (by samples; tokens are checked in test_mixture.cpp).
void check_epoch_is_the_picks(const MixtureShape& shape, const MixtureLoader& loader,
                              std::size_t epoch) {
  const std::vector<std::size_t> picks = stoke::testing::mixture_picks(shape, epoch);
  const std::size_t total = loader.batcher().epoch_batches(epoch);
  std::vector<std::size_t> got =
      begun_documents(loader, epoch, 0, total, shape.plan.kind == PlanKind::concat_shifted);
  const bool concat =
      shape.plan.kind == PlanKind::concat || shape.plan.kind == PlanKind::concat_shifted;
  if (concat) {
    ASSERT_EQ(got, picks) << "the concatenated epoch is the mixture's picks in order";
  } else {
    // Window w's documents are picks [w W, (w + 1) W).
    stoke::PlannedEpoch<stoke::testing::AnyMixturePlanner> walk(loader.batcher().planner(), epoch);
    std::map<std::size_t, std::vector<std::size_t>> by_window;
    for (std::size_t b = 0; b < total; ++b) {
      const auto* batch = walk.find(b);
      ASSERT_NE(batch, nullptr);
      for (const auto& row : batch->rows) {
        for (const auto& piece : row.pieces) {
          if (piece.begin == 0) by_window[walk.cursor().start.position].push_back(piece.document);
        }
      }
    }
    std::size_t seen = 0;
    for (auto& [position, documents] : by_window) {
      std::sort(documents.begin(), documents.end());
      std::vector<std::size_t> expected(
          picks.begin() + static_cast<std::ptrdiff_t>(position),
          picks.begin() +
              static_cast<std::ptrdiff_t>(std::min(picks.size(), position + shape.plan.window)));
      std::sort(expected.begin(), expected.end());
      ASSERT_EQ(documents, expected) << "window at position " << position;
      seen += documents.size();
    }
    ASSERT_EQ(seen, picks.size());
  }
  if (!concat || shape.options.unit != stoke::MixtureUnit::samples) return;
  const std::vector<std::size_t> offsets = shape.offsets();
  std::vector<double> since(shape.sources.size(), 0);
  std::size_t phase = 0;
  std::size_t phase_start = 0;
  for (std::size_t n = 0; n < got.size(); ++n) {
    while (phase < shape.options.schedule.size() && shape.options.schedule[phase].from_pick <= n) {
      phase_start = shape.options.schedule[phase++].from_pick;
      std::fill(since.begin(), since.end(), 0.0);
    }
    const auto& weights = phase == 0 ? shape.weights : shape.options.schedule[phase - 1].weights;
    const auto source = static_cast<std::size_t>(
        std::upper_bound(offsets.begin(), offsets.end(), got[n]) - offsets.begin() - 1);
    since[source] += 1;
    double total_weight = 0;
    for (const auto w : weights) total_weight += static_cast<double>(w);
    for (std::size_t i = 0; i < weights.size(); ++i) {
      const double share =
          static_cast<double>(weights[i]) * static_cast<double>(n + 1 - phase_start) / total_weight;
      ASSERT_LE(std::abs(since[i] - share), 1.0) << "source " << i << " after pick " << n;
    }
  }
}

/// Takes up to `steps` batches from each part in lockstep; returns each part's planned batch
/// indices (padding repeats marked by adding `padding_mark`) and their bits.
constexpr std::size_t padding_mark = 1u << 30;
struct Taken {
  std::vector<std::vector<std::size_t>> planned;
  std::vector<std::vector<stoke::PackedBatch>> data;
};
Taken take(std::vector<MixtureLoader>& parts, std::size_t steps = SIZE_MAX) {
  Taken out{std::vector<std::vector<std::size_t>>(parts.size()),
            std::vector<std::vector<stoke::PackedBatch>>(parts.size())};
  for (std::size_t p = 0; p < parts.size() && steps > 0; ++p) {
    auto range = parts[p].iter();
    auto it = range.begin();
    for (std::size_t t = 0; t < steps && it != range.end(); ++t) {
      if (t > 0 && ++it == range.end()) break;  // never past the `steps`-th: it would count
      out.planned[p].push_back(it->indices.at(0) + (it->padding == 1 ? padding_mark : 0));
      out.data[p].push_back(it->data);
    }
  }
  return out;
}

/// The real (non-padding) planned batches of `taken`, sorted.
std::vector<std::size_t> real_batches(const Taken& taken) {
  std::vector<std::size_t> out;
  for (const auto& part : taken.planned) {
    for (const std::size_t b : part) {
      if (b < padding_mark) out.push_back(b);
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

TEST(MixtureLoader, TheEpochIsTheMixturesPicksOnEveryDeviceAndRankInEqualCounts) {
  std::mt19937_64 rng(3737);
  for (int trial = 0; trial < 50; ++trial) {
    const MixtureShape shape = stoke::testing::random_mixture_shape(rng);
    SCOPED_TRACE(shape.describe());
    const TokenCorpus corpus(shape.concatenated());
    auto loader = stoke::testing::mixture_loader(shape, corpus, shape.plan.workers);
    for (std::size_t epoch = 0; epoch < 2; ++epoch) {
      check_epoch_is_the_picks(shape, loader, epoch);
      auto parts = stoke::testing::device_loaders(loader, shape.plan.ranks, shape.plan.devices);
      for (auto& part : parts) part.set_epoch(epoch);
      const Taken taken = take(parts);
      std::vector<std::vector<int>> uses;
      for (const auto length : shape.concatenated()) uses.emplace_back(length, 0);
      for (std::size_t p = 0; p < parts.size(); ++p) {
        ASSERT_EQ(taken.planned[p].size(), taken.planned[0].size()) << "part " << p;
        for (std::size_t k = 0; k < taken.planned[p].size(); ++k) {
          if (taken.planned[p][k] >= padding_mark) continue;
          const std::size_t inputs =
              shape.plan.kind == PlanKind::concat_shifted ? shape.plan.sequence_length : SIZE_MAX;
          ASSERT_EQ(stoke::testing::packed_batch_fault(taken.data[p][k], inputs, &uses), "");
        }
      }
      // Each token of document d is used as often as the mixture picked d.
      const std::size_t total = loader.batcher().epoch_batches(epoch);
      const bool all =
          shape.plan.remainder == stoke::Remainder::pad || real_batches(taken).size() == total;
      std::vector<int> picked(uses.size(), 0);
      for (const std::size_t d : stoke::testing::mixture_picks(shape, epoch)) ++picked[d];
      for (std::size_t d = 0; d < uses.size(); ++d) {
        for (std::size_t t = 0; t < uses[d].size(); ++t) {
          if (all) {
            ASSERT_EQ(uses[d][t], picked[d]) << "token " << t << " of document " << d;
          } else {
            ASSERT_LE(uses[d][t], picked[d]) << "token " << t << " of document " << d;
          }
        }
      }
    }
  }
}

TEST(MixtureLoader, TheSameBitsForAnyWorkerCount) {
  std::mt19937_64 rng(373);
  for (int trial = 0; trial < 12; ++trial) {
    MixtureShape shape = stoke::testing::random_mixture_shape(rng);
    SCOPED_TRACE(shape.describe());
    const TokenCorpus corpus(shape.concatenated());
    std::vector<std::vector<stoke::PackedBatch>> runs;
    for (const std::size_t workers : {std::size_t{0}, std::size_t{1}, std::size_t{3}}) {
      auto loader = stoke::testing::mixture_loader(shape, corpus, workers);
      auto parts = stoke::testing::device_loaders(loader, shape.plan.ranks, shape.plan.devices);
      runs.push_back(take(parts).data.back());
    }
    for (std::size_t r = 1; r < runs.size(); ++r) {
      ASSERT_EQ(runs[r].size(), runs[0].size());
      for (std::size_t k = 0; k < runs[0].size(); ++k) {
        ASSERT_TRUE(stoke::testing::same_packed_bits(runs[r][k], runs[0][k])) << "batch " << k;
      }
    }
  }
}

TEST(MixtureLoader, ResumesExactlyAndElasticallyWithItsPerSourceCountsInTheState) {
  std::mt19937_64 rng(37373);
  for (int trial = 0; trial < 40; ++trial) {
    const MixtureShape shape = stoke::testing::random_mixture_shape(rng);
    SCOPED_TRACE(shape.describe());
    const TokenCorpus corpus(shape.concatenated());
    auto loader = stoke::testing::mixture_loader(shape, corpus, shape.plan.workers);
    const std::size_t total = loader.batcher().epoch_batches(0);
    auto parts = stoke::testing::device_loaders(loader, shape.plan.ranks, shape.plan.devices);
    const std::size_t rounds = total / parts.size();
    const std::size_t steps = rounds == 0 ? 0 : rng() % rounds;
    const Taken before = take(parts, steps);
    const stoke::LoaderState state = parts.front().state();
    ASSERT_EQ(state.epoch, 0u);
    ASSERT_EQ(state.consumed, steps * parts.size());

    // The per-source counts are the documents begun in the batches consumed, and their tokens.
    const std::vector<std::size_t> offsets = shape.offsets();
    std::vector<std::uint64_t> samples(shape.sources.size(), 0);
    std::vector<std::uint64_t> tokens(shape.sources.size(), 0);
    for (const std::size_t d : begun_documents(loader, 0, 0, state.consumed,
                                               shape.plan.kind == PlanKind::concat_shifted)) {
      const auto source = static_cast<std::size_t>(
          std::upper_bound(offsets.begin(), offsets.end(), d) - offsets.begin() - 1);
      ++samples[source];
      tokens[source] += static_cast<std::uint64_t>(shape.sources[source][d - offsets[source]]);
    }
    const auto json = nlohmann::json::parse(to_json(state).dump());
    ASSERT_EQ(json.at("plan_state").at("consumed"), nlohmann::json(samples));
    ASSERT_EQ(json.at("plan_state").at("tokens"), nlohmann::json(tokens));

    // Elastic: the rest of the epoch on another number of devices and ranks.
    MixtureShape other = shape;
    other.plan.devices = rng() % 3 + 1;
    other.plan.ranks = rng() % 2 + 1;
    auto resumed = stoke::testing::mixture_loader(shape, corpus, rng() % 3);
    resumed.restore(stoke::loader_state_from_json(json));
    auto rest_parts = stoke::testing::device_loaders(resumed, other.plan.ranks, other.plan.devices);
    const Taken rest = take(rest_parts);
    for (std::size_t p = 0; p < rest_parts.size(); ++p) {
      ASSERT_EQ(rest.planned[p].size(), rest.planned[0].size()) << "resumed part " << p;
    }
    std::vector<std::size_t> all = real_batches(before);
    const std::vector<std::size_t> after = real_batches(rest);
    all.insert(all.end(), after.begin(), after.end());
    std::sort(all.begin(), all.end());
    std::vector<std::size_t> every(total);
    for (std::size_t b = 0; b < total; ++b) every[b] = b;
    if (shape.plan.remainder == stoke::Remainder::pad) {
      ASSERT_EQ(all, every) << "every planned batch exactly once across the resume";
    } else {
      ASSERT_TRUE(std::adjacent_find(all.begin(), all.end()) == all.end()) << "no batch twice";
    }
    // The batches after the resume are the plan's, bit for bit.
    for (std::size_t p = 0; p < rest_parts.size(); ++p) {
      for (std::size_t k = 0; k < rest.planned[p].size(); ++k) {
        const std::size_t planned = rest.planned[p][k] % padding_mark;
        const auto expected = stoke::make_packed_batch(loader.batcher().planned(0, planned), corpus,
                                                       stoke::testing::test_pad_id);
        if (rest.planned[p][k] < padding_mark) {
          ASSERT_TRUE(stoke::testing::same_packed_bits(rest.data[p][k], expected))
              << "part " << p << " batch " << k << " planned " << planned;
        }
      }
    }
  }
}

}  // namespace

// Mixtures: exact proportions at every prefix of the epoch (within one sample per source),
// by samples or by tokens, each source's samples in its own order without repeats, exact
// resume from per-source counts, and a clear error when a source runs out.
#include <gtest/gtest.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include <stoke/stoke.hpp>

#include "token_corpus.hpp"

namespace {

using stoke::testing::random_lengths;

/// Sources of `sizes` documents (lengths from `seed`) with `weights`.
struct MixtureCorpora {
  std::vector<std::vector<std::int32_t>> lengths;
  std::vector<stoke::MixtureSource> sources(const std::vector<std::uint64_t>& weights) const {
    std::vector<stoke::MixtureSource> out;
    for (std::size_t i = 0; i < lengths.size(); ++i) {
      out.push_back({stoke::DocumentLengths(lengths[i]), weights[i]});
    }
    return out;
  }
};

MixtureCorpora corpora_of(const std::vector<std::size_t>& sizes, std::uint64_t seed) {
  MixtureCorpora out;
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    out.lengths.push_back(random_lengths(sizes[i], 50, seed + i));
  }
  return out;
}

TEST(Mixture, EveryPrefixIsWithinOneSamplePerSourceOfTheWeights) {
  for (std::uint64_t seed = 0; seed < 20; ++seed) {
    const std::size_t count = 2 + seed % 4;
    std::vector<std::uint64_t> weights;
    std::vector<std::size_t> sizes;
    for (std::size_t i = 0; i < count; ++i) {
      weights.push_back(1 + stoke::mix64(seed * 31 + i) % 9);
      sizes.push_back(5000);
    }
    const auto corpora = corpora_of(sizes, seed);
    const stoke::Mixture mixture(corpora.sources(weights),
                                 {.samples_per_epoch = 3000, .seed = seed});
    auto state = mixture.start(0);
    std::vector<std::set<std::size_t>> seen(count);
    std::size_t picks = 0;
    while (const auto pick = mixture.next(state)) {
      ++picks;
      EXPECT_TRUE(seen[pick->source].insert(pick->index).second) << "a sample repeated";
      for (std::size_t i = 0; i < count; ++i) {
        const double share = static_cast<double>(weights[i]) * static_cast<double>(picks) /
                             static_cast<double>(mixture.total_weight());
        ASSERT_LE(std::abs(static_cast<double>(state.consumed[i]) - share), 1.0)
            << "seed " << seed << " source " << i << " after " << picks << " picks";
      }
    }
    EXPECT_EQ(picks, 3000u);
  }
}

TEST(Mixture, TokenWeightsAreWithinOneDocumentPerSourceAtEveryPrefix) {
  const auto corpora = corpora_of({4000, 4000, 4000}, 9);
  const std::vector<std::uint64_t> weights{5, 3, 2};
  const stoke::Mixture mixture(
      corpora.sources(weights),
      {.unit = stoke::MixtureUnit::tokens, .samples_per_epoch = 4000, .seed = 1});
  auto state = mixture.start(0);
  std::uint64_t all = 0;
  while (const auto pick = mixture.next(state)) {
    all += pick->length;
    for (std::size_t i = 0; i < 3; ++i) {
      const double share = static_cast<double>(weights[i] * all) / 10.0;
      ASSERT_LE(std::abs(static_cast<double>(state.tokens[i]) - share), 50.0 + 1e-9)
          << "source " << i << " after " << state.picks << " picks";
    }
  }
}

TEST(Mixture, ResumesExactlyFromPerSourceCounts) {
  const auto corpora = corpora_of({300, 700}, 4);
  const stoke::Mixture mixture(corpora.sources({1, 3}), {.samples_per_epoch = 900, .seed = 6});
  auto state = mixture.start(2);
  std::vector<std::pair<std::size_t, std::size_t>> whole;
  while (const auto pick = mixture.next(state)) whole.emplace_back(pick->source, pick->index);
  auto partial = mixture.start(2);
  for (int i = 0; i < 417; ++i) (void)mixture.next(partial);
  auto restored = stoke::mixture_state_from_json(stoke::to_json(partial));
  ASSERT_EQ(restored, partial);
  for (std::size_t k = 417; k < whole.size(); ++k) {
    const auto pick = mixture.next(restored);
    ASSERT_TRUE(pick);
    EXPECT_EQ(std::make_pair(pick->source, pick->index), whole[k]) << "pick " << k;
  }
  EXPECT_FALSE(mixture.next(restored));
}

TEST(Mixture, EveryPrefixOfEachPhaseOfAScheduleIsWithinOneSampleOfItsWeights) {
  const auto corpora = corpora_of({5000, 5000, 5000}, 13);
  const std::vector<stoke::MixturePhase> schedule{{.from_pick = 1000, .weights = {1, 0, 4}},
                                                  {.from_pick = 2500, .weights = {2, 5, 1}}};
  const stoke::Mixture mixture(corpora.sources({3, 2, 1}),
                               {.samples_per_epoch = 4000, .seed = 2, .schedule = schedule});
  const auto phase_weights = [&](std::size_t pick) {
    if (pick >= 2500) return schedule[1].weights;
    if (pick >= 1000) return schedule[0].weights;
    return std::vector<std::uint64_t>{3, 2, 1};
  };
  auto state = mixture.start(0);
  std::vector<std::size_t> at_phase_start(3, 0);
  std::size_t phase_first = 0;
  std::vector<std::pair<std::size_t, std::size_t>> whole;
  while (const auto pick = mixture.next(state)) {
    whole.emplace_back(pick->source, pick->index);
    const std::size_t pick_number = state.picks - 1;
    if (pick_number == 1000 || pick_number == 2500) {
      phase_first = pick_number;
      at_phase_start = state.consumed;
      --at_phase_start[pick->source];
    }
    const auto weights = phase_weights(pick_number);
    const double total = static_cast<double>(weights[0] + weights[1] + weights[2]);
    const double in_phase = static_cast<double>(state.picks - phase_first);
    for (std::size_t i = 0; i < 3; ++i) {
      const double share = static_cast<double>(weights[i]) * in_phase / total;
      ASSERT_LE(std::abs(static_cast<double>(state.consumed[i] - at_phase_start[i]) - share), 1.0)
          << "source " << i << " after " << state.picks << " picks";
    }
  }
  ASSERT_EQ(whole.size(), 4000u);
  // Resumed from JSON in each phase, the picks go on as they did.
  for (const std::size_t stop : {700u, 1000u, 1800u, 3100u}) {
    auto partial = mixture.start(0);
    for (std::size_t k = 0; k < stop; ++k) (void)mixture.next(partial);
    auto restored = stoke::mixture_state_from_json(stoke::to_json(partial));
    ASSERT_EQ(restored, partial);
    for (std::size_t k = stop; k < whole.size(); ++k) {
      const auto pick = mixture.next(restored);
      ASSERT_TRUE(pick);
      ASSERT_EQ(std::make_pair(pick->source, pick->index), whole[k]) << "pick " << k;
    }
  }
  EXPECT_THROW(
      stoke::Mixture(corpora.sources({1, 1, 1}),
                     {.samples_per_epoch = 10, .schedule = {{.from_pick = 5, .weights = {1, 1}}}}),
      stoke::UsageError);
}

TEST(Mixture, RefusesTheStateOfAnotherMixture) {
  const auto corpora = corpora_of({300, 700}, 4);
  const stoke::Mixture mixture(corpora.sources({1, 3}), {.samples_per_epoch = 900, .seed = 6});
  const stoke::Mixture reweighted(corpora.sources({1, 2}), {.samples_per_epoch = 900, .seed = 6});
  auto state = mixture.start(0);
  (void)mixture.next(state);
  EXPECT_THROW((void)reweighted.next(state), stoke::StateError);
  auto json = stoke::to_json(state);
  json["consumed"][1] = -1;
  EXPECT_THROW((void)stoke::mixture_state_from_json(json), stoke::InputError);
}

TEST(Mixture, ASourceThatRunsOutIsAnErrorNamingItOrWrapsOrStops) {
  const auto corpora = corpora_of({10, 1000}, 2);
  const stoke::Mixture strict(corpora.sources({1, 1}), {.samples_per_epoch = 100});
  auto state = strict.start(0);
  try {
    while (strict.next(state)) {
    }
    FAIL() << "a source ran out silently";
  } catch (const stoke::InputError& error) {
    EXPECT_NE(std::string(error.what()).find("mixture source 0 ran out after 10 samples"),
              std::string::npos)
        << error.what();
  }
  const stoke::Mixture wrapping(
      corpora.sources({1, 1}),
      {.exhaustion = stoke::SourceExhaustion::wrap, .samples_per_epoch = 100});
  state = wrapping.start(0);
  std::vector<std::size_t> first_pass;
  std::vector<std::size_t> second_pass;
  while (const auto pick = wrapping.next(state)) {
    if (pick->source != 0) continue;
    (first_pass.size() < 10 ? first_pass : second_pass).push_back(pick->index);
  }
  EXPECT_EQ(std::set<std::size_t>(second_pass.begin(), second_pass.begin() + 10).size(), 10u);
  EXPECT_NE(first_pass, std::vector<std::size_t>(second_pass.begin(), second_pass.begin() + 10));
  const stoke::Mixture stopping(corpora.sources({1, 1}),
                                {.exhaustion = stoke::SourceExhaustion::stop});
  state = stopping.start(0);
  std::size_t picks = 0;
  while (stopping.next(state)) ++picks;
  EXPECT_EQ(picks, 20u);  // 10 of each, then source 0 is due again and has none
}

}  // namespace

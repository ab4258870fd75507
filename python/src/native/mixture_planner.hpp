#pragma once
/// @file
/// Mixtures in `stoke_loader`: `make_mixture_planner`, the `AnyPlanner` of a weighted blend of
/// token sources (a `stoke::MixturePlanner` under a pad, pack or bucket plan), by the names and
/// numbers `stoke_loader.mixture` passes.

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <stoke/core/error.hpp>
#include <stoke/sequences/mixture.hpp>
#include <stoke/sequences/mixture_planner.hpp>

#include "plan_of.hpp"
#include "sequence_planners.hpp"
#include "token_source.hpp"

namespace stoke_python {

/// One phase of a mixture's weight schedule: from which pick of each epoch, which weights.
using SchedulePhase = std::pair<std::size_t, std::vector<std::uint64_t>>;

/// The planner of a mixture of `sources` (their sequences, concatenated in order, are the
/// loader's dataset) with `weights`, `unit` ("samples" or "tokens"), `exhaustion` ("error",
/// "wrap" or "stop"), `samples_per_epoch` picks an epoch (0: until a source stops), each
/// source shuffled under `seed` (or not), `schedule`, planned by `plan` (whose own shuffle is
/// off: the mixture orders the documents).
inline AnyPlanner make_mixture_planner(const std::vector<TokenSource>& sources,
                                       const std::vector<std::uint64_t>& weights,
                                       const std::string& unit, const std::string& exhaustion,
                                       std::size_t samples_per_epoch, bool shuffle,
                                       std::uint64_t seed,
                                       const std::vector<SchedulePhase>& schedule,
                                       PlanParameters plan) {
  if (sources.size() != weights.size()) {
    throw stoke::UsageError("stoke_loader: a mixture of " + std::to_string(sources.size()) +
                            " sources has " + std::to_string(weights.size()) + " weights");
  }
  stoke::MixtureOptions options{
      .samples_per_epoch = samples_per_epoch, .shuffle = shuffle, .seed = seed};
  if (unit == "tokens") {
    options.unit = stoke::MixtureUnit::tokens;
  } else if (unit != "samples") {
    throw stoke::UsageError("stoke_loader: a mixture's unit is \"samples\" or \"tokens\", not \"" +
                            unit + "\"");
  }
  if (exhaustion == "wrap") {
    options.exhaustion = stoke::SourceExhaustion::wrap;
  } else if (exhaustion == "stop") {
    options.exhaustion = stoke::SourceExhaustion::stop;
  } else if (exhaustion != "error") {
    throw stoke::UsageError(
        "stoke_loader: a mixture's exhaustion is \"error\", \"wrap\" or "
        "\"stop\", not \"" +
        exhaustion + "\"");
  }
  for (const auto& [from_pick, phase_weights] : schedule) {
    options.schedule.push_back({.from_pick = from_pick, .weights = phase_weights});
  }
  std::vector<stoke::MixtureSource> mixed;
  for (std::size_t i = 0; i < sources.size(); ++i) {
    mixed.push_back({sources[i].lengths(), weights[i]});
  }
  plan.shuffle = false;
  return AnyPlanner(stoke::MixturePlanner<AnyPlanner>(
      stoke::Mixture(std::move(mixed), std::move(options)),
      [plan](stoke::DocumentLengths lengths) { return plan_of(lengths, plan); }));
}

}  // namespace stoke_python

#pragma once
/// @file
/// A mixture's account in a loader's state (`LoaderState::plan_state`): its parameters (weights,
/// schedule, sources, unit, policy, seed) and per-source counts, as JSON, and the checks that
/// refuse a saved account naming what changed.

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include <stoke/core/error.hpp>
#include <stoke/sequences/mixture.hpp>

namespace stoke {

/// The format a mixture's account says it is in.
inline constexpr const char* mixture_account_format = "stoke.mixture_account.v1";

/// What a loader over a mixture delivered of each source: the documents begun (a document cut
/// over batches counts in the batch of its first token; an empty one once its plan window is
/// passed) and their tokens (whole documents).
struct MixtureCounts {
  std::vector<std::uint64_t> samples{};  ///< documents of each source
  std::vector<std::uint64_t> tokens{};   ///< their tokens
  friend bool operator==(const MixtureCounts&, const MixtureCounts&) = default;
};

/// The parameters of `mixture` in its account, as JSON (without the counts).
[[nodiscard]] inline nlohmann::json mixture_parameters(const Mixture& mixture) {
  nlohmann::json weights = nlohmann::json::array();
  nlohmann::json fingerprints = nlohmann::json::array();
  for (const MixtureSource& source : mixture.sources()) {
    weights.push_back(source.weight);
    fingerprints.push_back(source.lengths.fingerprint());
  }
  nlohmann::json schedule = nlohmann::json::array();
  for (const MixturePhase& phase : mixture.options().schedule) {
    schedule.push_back({{"from_pick", phase.from_pick}, {"weights", phase.weights}});
  }
  const MixtureOptions& options = mixture.options();
  static constexpr const char* units[] = {"samples", "tokens"};
  static constexpr const char* policies[] = {"error", "wrap", "stop"};
  return {{"format", mixture_account_format},
          {"weights", weights},
          {"schedule", schedule},
          {"source_fingerprints", fingerprints},
          {"unit", units[static_cast<int>(options.unit)]},
          {"exhaustion", policies[static_cast<int>(options.exhaustion)]},
          {"samples_per_epoch", options.samples_per_epoch},
          {"shuffle", options.shuffle},
          {"seed", options.seed}};
}

/// The account of a mixture of `parameters` (`mixture_parameters`) having delivered `counts`.
[[nodiscard]] inline nlohmann::json mixture_account(nlohmann::json parameters,
                                                    const MixtureCounts& counts) {
  parameters["consumed"] = counts.samples;
  parameters["tokens"] = counts.tokens;
  return parameters;
}

/// Refuses `saved` unless it is an account of a mixture of parameters `here`
/// (`mixture_parameters`): an `InputError` naming
/// the first that changed (the number of sources, a source's weight or documents, the weight
/// schedule, ...), with what was saved and what this mixture has. A schedule is not applied
/// from a resume point: the picks after it would not continue the saved ones.
inline void check_mixture_parameters(const nlohmann::json& here, const nlohmann::json& saved) {
  const std::string refused = "stoke: cannot restore loader state: ";
  if (!saved.is_object() || !saved.contains("format") ||
      saved.at("format") != mixture_account_format) {
    throw InputError(refused + "it has no mixture account (plan_state " +
                     saved.dump().substr(0, 80) + "): it was saved by a loader of another kind");
  }
  const auto changed = [&](const std::string& what, const char* field) {
    return InputError(refused + "the mixture's " + what + " changed: it was saved with " +
                      saved.value(field, nlohmann::json{}).dump() + ", this loader has " +
                      here.at(field).dump());
  };
  const auto& weights = here.at("weights");
  if (saved.value("weights", nlohmann::json{}).size() != weights.size()) {
    throw changed("number of sources (weights)", "weights");
  }
  for (const char* field : {"weights", "source_fingerprints"}) {
    const nlohmann::json got = saved.value(field, nlohmann::json{});
    for (std::size_t i = 0; i < weights.size(); ++i) {
      if (!got.is_array() || got.size() != weights.size() || got[i] != here.at(field)[i]) {
        throw changed(std::string(field == std::string("weights") ? "weight" : "documents") +
                          " of source " + std::to_string(i),
                      field);
      }
    }
  }
  if (saved.value("schedule", nlohmann::json{}) != here.at("schedule")) {
    throw InputError(changed("weight schedule", "schedule").what() +
                     std::string(" (a schedule is not changed on resume: the picks after the "
                                 "resume point would not continue the saved counts)"));
  }
  for (const char* field : {"unit", "exhaustion", "samples_per_epoch", "shuffle", "seed"}) {
    if (saved.value(field, nlohmann::json{}) != here.at(field)) throw changed(field, field);
  }
}

/// Refuses `saved` unless its counts are `counts` (those the mixture's plan gives where the
/// state stands): an `InputError` saying both.
inline void check_mixture_counts(const nlohmann::json& saved, const MixtureCounts& counts,
                                 std::size_t epoch, std::size_t consumed) {
  const nlohmann::json samples = counts.samples;
  const nlohmann::json tokens = counts.tokens;
  if (saved.value("consumed", nlohmann::json{}) != samples ||
      saved.value("tokens", nlohmann::json{}) != tokens) {
    throw InputError("stoke: cannot restore loader state: its mixture counts (documents " +
                     saved.value("consumed", nlohmann::json{}).dump() + ", tokens " +
                     saved.value("tokens", nlohmann::json{}).dump() + ") are not those of batch " +
                     std::to_string(consumed) + " of epoch " + std::to_string(epoch) +
                     " of this mixture's plan (documents " + samples.dump() + ", tokens " +
                     tokens.dump() + "): the state was edited, or a source's documents changed");
  }
}

}  // namespace stoke

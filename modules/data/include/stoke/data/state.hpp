#pragma once
/// @file
/// `LoaderState`: where a loader stands, small and exact: {seed, epoch, samples consumed}.
/// Serialisable to JSON; restoring it resumes exactly, also onto another number of devices.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include <stoke/core/error.hpp>
#include <stoke/core/json_fields.hpp>
#include <stoke/data/remainder.hpp>

namespace stoke {

/// Where a loader (or all the shares of a split, together) stands.
///
/// `consumed` counts positions of `epoch`'s order that were delivered, by all shares of a
/// split together; since share `k` of `n` takes batch `k` of each round, they are always a
/// prefix of the epoch, so the state does not depend on how many shares there were.
///
/// Under the shard rank split (`share_by_shards`), every rank reads its own shards in lockstep:
/// `shard_ranks` is the number of ranks the epoch's shards were dealt to, `rank_consumed` the
/// positions each rank consumed of its own sequence, and `consumed` what was consumed of the
/// ranks' leftovers after a restore onto another number of ranks (0 before one).
///
/// A planned loader's (`PlanBatcher`) positions are the batches of the epoch's plan: `consumed`
/// counts planned batches, and `plan_fingerprint` (0 for any other loader) names the plan, so
/// that a state is never resumed under another plan; `plan_state` is the plan's own account
/// (see `PlannedBatches::describe`).
struct LoaderState {
  std::uint64_t seed = 0;        ///< key of the epoch order
  std::size_t epoch = 0;         ///< the epoch in progress (or next to start)
  std::size_t consumed = 0;      ///< positions of `epoch` already delivered
  std::size_t dataset_size = 0;  ///< checked on restore: the same dataset
  bool shuffle = false;          ///< checked on restore: the same order
  bool shard_aware = false;      ///< checked on restore: the same order
  /// Checked on restore: the same remainder policy (padding or dropping the same samples).
  Remainder remainder = Remainder::partial;
  std::size_t shard_ranks = 0;         ///< under the shard rank split: its ranks (0: interleaved)
  std::size_t rank_consumed = 0;       ///< under the shard rank split: positions of each rank's own
  std::uint64_t plan_fingerprint = 0;  ///< a planned loader's plan (0: batches of samples)
  /// A planned loader's own account of where it stands, checked on restore (a mixture's
  /// parameters and per-source counts); null for any other.
  nlohmann::json plan_state{};

  friend bool operator==(const LoaderState&, const LoaderState&) = default;
};

/// The format a state's JSON says it is in (v3 added the shard rank split's two fields; a v2
/// state, without them, still loads).
inline constexpr const char* loader_state_format = "stoke.loader_state.v3";
/// The format before the shard rank split.
inline constexpr const char* loader_state_format_v2 = "stoke.loader_state.v2";

/// The state as JSON (`plan_fingerprint` only for a planned loader's state, so that any other
/// state's JSON is what it always was).
inline nlohmann::json to_json(const LoaderState& state) {
  nlohmann::json json = {{"format", loader_state_format},
                         {"seed", state.seed},
                         {"epoch", state.epoch},
                         {"consumed", state.consumed},
                         {"dataset_size", state.dataset_size},
                         {"shuffle", state.shuffle},
                         {"shard_aware", state.shard_aware},
                         {"remainder", remainder_name(state.remainder)},
                         {"shard_ranks", state.shard_ranks},
                         {"rank_consumed", state.rank_consumed}};
  if (state.plan_fingerprint != 0) json["plan_fingerprint"] = state.plan_fingerprint;
  if (!state.plan_state.is_null()) json["plan_state"] = state.plan_state;
  return json;
}

/// Reads a state from JSON; a missing or ill-typed field is an `InputError` naming it, and
/// `where` (a checkpoint's, say: "checkpoint 'ckpt' \"training\" metadata \"loader\"").
inline LoaderState loader_state_from_json(const nlohmann::json& json,
                                          const std::string& where = "loader state") {
  const stoke::JsonFields fields(json, where);
  const bool v2 = fields.at("format") == loader_state_format_v2;
  if (!v2 && fields.at("format") != loader_state_format) {
    throw InputError("stoke: " + where + " has format " + stoke::json_excerpt(fields.at("format")) +
                     ", expected \"" + loader_state_format + "\" (or \"" + loader_state_format_v2 +
                     "\")");
  }
  LoaderState state{fields.count("seed"),    fields.size("epoch"),
                    fields.size("consumed"), fields.size("dataset_size"),
                    fields.flag("shuffle"),  fields.flag("shard_aware")};
  const nlohmann::json& remainder = fields.at("remainder");
  const auto policy =
      remainder.is_string() ? remainder_named(remainder.get<std::string>()) : std::nullopt;
  if (!policy) {
    throw InputError("stoke: " + where +
                     " field \"remainder\" is not \"partial\", \"drop\" or \"pad\": " +
                     stoke::json_excerpt(remainder));
  }
  state.remainder = *policy;
  if (!v2) {
    state.shard_ranks = fields.size("shard_ranks");
    state.rank_consumed = fields.size("rank_consumed");
    if (json.contains("plan_fingerprint"))
      state.plan_fingerprint = fields.count("plan_fingerprint");
    if (json.contains("plan_state")) state.plan_state = json.at("plan_state");
  }
  return state;
}

/// Reads a state from JSON text; text that is not JSON is an `InputError` with the parser's
/// message (which names the byte offset).
inline LoaderState parse_loader_state(const std::string& text) {
  nlohmann::json json;
  try {
    json = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& error) {  // also a number beyond double's range
    throw InputError(std::string("stoke: loader state is not valid JSON: ") + error.what());
  }
  return loader_state_from_json(json);
}

}  // namespace stoke

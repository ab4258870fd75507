#pragma once
/// @file
/// `LoaderState`: where a loader stands, small and exact: {seed, epoch, samples consumed}.
/// Serialisable to JSON; restoring it resumes exactly, also onto another number of devices.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include <stoke/core/detail/json_fields.hpp>
#include <stoke/core/error.hpp>
#include <stoke/data/remainder.hpp>

namespace stoke {

/// Where a loader (or all the parts of a split, together) stands.
///
/// `consumed` counts positions of `epoch`'s order that were delivered, by all parts of a
/// split together; since part `k` of `n` takes batch `k` of each round, they are always a
/// prefix of the epoch, so the state does not depend on how many parts there were.
struct LoaderState {
  std::uint64_t seed = 0;        ///< key of the epoch order
  std::size_t epoch = 0;         ///< the epoch in progress (or next to start)
  std::size_t consumed = 0;      ///< positions of `epoch` already delivered
  std::size_t dataset_size = 0;  ///< checked on restore: the same dataset
  bool shuffle = false;          ///< checked on restore: the same order
  bool shard_aware = false;      ///< checked on restore: the same order
  /// Checked on restore: the same remainder policy (padding or dropping the same samples).
  Remainder remainder = Remainder::partial;

  friend bool operator==(const LoaderState&, const LoaderState&) = default;
};

/// The format a state's JSON says it is in.
inline constexpr const char* loader_state_format = "stoke.loader_state.v2";

/// The state as JSON.
inline nlohmann::json to_json(const LoaderState& state) {
  return {{"format", loader_state_format},
          {"seed", state.seed},
          {"epoch", state.epoch},
          {"consumed", state.consumed},
          {"dataset_size", state.dataset_size},
          {"shuffle", state.shuffle},
          {"shard_aware", state.shard_aware},
          {"remainder", remainder_name(state.remainder)}};
}

/// Reads a state from JSON; a missing or ill-typed field is an `InputError` naming it, and
/// `where` (a checkpoint's, say: "checkpoint 'ckpt' \"training\" metadata \"loader\"").
inline LoaderState loader_state_from_json(const nlohmann::json& json,
                                          const std::string& where = "loader state") {
  const detail::JsonFields fields(json, where);
  if (fields.at("format") != loader_state_format) {
    throw InputError("stoke: " + where + " has format " +
                     detail::json_excerpt(fields.at("format")) + ", expected \"" +
                     loader_state_format + "\"");
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
                     detail::json_excerpt(remainder));
  }
  state.remainder = *policy;
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

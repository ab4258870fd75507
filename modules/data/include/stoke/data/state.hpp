#pragma once
/// @file
/// `LoaderState`: where a loader stands, small and exact: {seed, epoch, samples consumed}.
/// Serialisable to JSON; restoring it resumes exactly, also onto another number of devices.

#include <cstddef>
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include <stoke/core/error.hpp>

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

  friend bool operator==(const LoaderState&, const LoaderState&) = default;
};

/// The state as JSON.
inline nlohmann::json to_json(const LoaderState& state) {
  return {{"format", "stoke.loader_state.v1"},
          {"seed", state.seed},
          {"epoch", state.epoch},
          {"consumed", state.consumed},
          {"dataset_size", state.dataset_size},
          {"shuffle", state.shuffle},
          {"shard_aware", state.shard_aware}};
}

/// Reads a state from JSON; a missing or ill-typed field is an `InputError` naming it.
inline LoaderState loader_state_from_json(const nlohmann::json& json) {
  const auto field = [&](const char* name) -> const nlohmann::json& {
    if (!json.is_object() || !json.contains(name)) {
      throw InputError(std::string("stoke: loader state has no field \"") + name + "\"");
    }
    return json.at(name);
  };
  const auto number = [&](const char* name) -> std::uint64_t {
    const auto& value = field(name);
    if (!value.is_number_unsigned()) {
      throw InputError(std::string("stoke: loader state field \"") + name +
                       "\" is not a non-negative integer: " + value.dump());
    }
    return value.get<std::uint64_t>();
  };
  const auto flag = [&](const char* name) -> bool {
    const auto& value = field(name);
    if (!value.is_boolean()) {
      throw InputError(std::string("stoke: loader state field \"") + name +
                       "\" is not true or false: " + value.dump());
    }
    return value.get<bool>();
  };
  if (field("format") != "stoke.loader_state.v1") {
    throw InputError("stoke: loader state has format " + field("format").dump() +
                     ", expected \"stoke.loader_state.v1\"");
  }
  return LoaderState{number("seed"),         number("epoch"), number("consumed"),
                     number("dataset_size"), flag("shuffle"), flag("shard_aware")};
}

/// Reads a state from JSON text; text that is not JSON is an `InputError` with the parser's
/// message (which names the byte offset).
inline LoaderState parse_loader_state(const std::string& text) {
  nlohmann::json json;
  try {
    json = nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& error) {
    throw InputError(std::string("stoke: loader state is not valid JSON: ") + error.what());
  }
  return loader_state_from_json(json);
}

}  // namespace stoke

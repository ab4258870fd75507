#pragma once
/// @file
/// `SequencePlanState`: where a split of a variable-length batch plan stands, small and exact:
/// {epoch, batches consumed, the cursor of the plan window holding the next batch} and the
/// fingerprint of the plan's parameters, checked on restore. Serialisable to JSON.

#include <cstddef>
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include <stoke/core/error.hpp>
#include <stoke/core/json_fields.hpp>
#include <stoke/sequences/planned_epoch.hpp>

namespace stoke {

/// Where all the shares of a split of a plan stand, together.
///
/// `consumed` counts batches of `epoch`'s plan delivered by all shares together; share `k` of
/// `n` takes batch `k` of each round of `n`, so they are a prefix of the epoch, and the state does
/// not depend on how many shares there were (a restore may use another number). `cursor` is the
/// plan window holding batch `consumed`, so a restore plans that window only.
struct SequencePlanState {
  std::size_t epoch = 0;          ///< the epoch in progress (or next to start)
  std::size_t consumed = 0;       ///< batches of `epoch` already delivered
  PlanCursor cursor{};            ///< the plan window holding batch `consumed`
  std::uint64_t fingerprint = 0;  ///< checked on restore: the same plan (0: not checked)

  friend bool operator==(const SequencePlanState&, const SequencePlanState&) = default;
};

/// The format a state's JSON says it is in.
inline constexpr const char* sequence_plan_state_format = "stoke.sequence_plan_state.v1";

/// The state as JSON.
inline nlohmann::json to_json(const SequencePlanState& state) {
  return {{"format", sequence_plan_state_format},
          {"epoch", state.epoch},
          {"consumed", state.consumed},
          {"window_first_batch", state.cursor.first_batch},
          {"window", state.cursor.start.window},
          {"window_position", state.cursor.start.position},
          {"window_token", state.cursor.start.token},
          {"fingerprint", state.fingerprint}};
}

/// Reads a state from JSON; a missing or ill-typed field is an `InputError` naming it and `where`.
inline SequencePlanState sequence_plan_state_from_json(
    const nlohmann::json& json, const std::string& where = "sequence plan state") {
  const JsonFields fields(json, where);
  if (fields.at("format") != sequence_plan_state_format) {
    throw InputError("stoke: " + where + " has format " + json_excerpt(fields.at("format")) +
                     ", expected \"" + sequence_plan_state_format + "\"");
  }
  return SequencePlanState{
      .epoch = fields.size("epoch"),
      .consumed = fields.size("consumed"),
      .cursor = PlanCursor{.first_batch = fields.size("window_first_batch"),
                           .start = WindowStart{.window = fields.size("window"),
                                                .position = fields.size("window_position"),
                                                .token = fields.size("window_token")}},
      .fingerprint = fields.count("fingerprint")};
}

}  // namespace stoke

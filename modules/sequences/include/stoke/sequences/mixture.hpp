#pragma once
/// @file
/// `Mixture`: a weighted blend of several sources in a deterministic interleaving with exact
/// proportions at every prefix of the epoch (the largest-deficit rule, not random draws that
/// drift), weighted by samples or by tokens, resumable exactly from per-source counts.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include <stoke/core/error.hpp>
#include <stoke/core/json_fields.hpp>
#include <stoke/core/rng.hpp>
#include <stoke/data/order.hpp>
#include <stoke/sequences/sequence_plan.hpp>

namespace stoke {

namespace detail {
/// A signed integer wide enough for weight x count products (GCC and Clang).
__extension__ using MixtureDeficit = __int128;
}  // namespace detail

/// What a mixture's weights share out.
enum class MixtureUnit {
  samples,  ///< source i gives weight_i / sum of weights of the samples at every prefix
  tokens,   ///< ... of the tokens (off by at most one sample per source at every prefix)
};

/// What a mixture does when a source has given all its samples in the epoch.
enum class SourceExhaustion {
  error,  ///< throw an `InputError` naming the source, the epoch and the pick
  wrap,   ///< start another pass over the source, in a new order
  stop,   ///< end the epoch
};

/// One source of a mixture.
struct MixtureSource {
  DocumentLengths lengths;   ///< its documents' lengths (their count is the source's size)
  std::uint64_t weight = 1;  ///< its share, relative to the others' (integer: exact)
};

/// A change of a mixture's weights: from pick `from_pick` of each epoch on, `weights` (one per
/// source; 0 pauses a source) replace the weights before. A training step of B samples begins
/// at pick step x B of its epoch.
struct MixturePhase {
  std::size_t from_pick = 0;                ///< the phase's first pick of the epoch
  std::vector<std::uint64_t> weights = {};  ///< one per source, integers (exact)
};

/// The parameters of a `Mixture`.
struct MixtureOptions {
  MixtureUnit unit = MixtureUnit::samples;                ///< what the weights share out
  SourceExhaustion exhaustion = SourceExhaustion::error;  ///< when a source runs out
  std::size_t samples_per_epoch = 0;                      ///< picks per epoch (0: until one stops)
  bool shuffle = true;                                    ///< shuffle each source's order
  std::uint64_t seed = 0;                                 ///< key of the sources' orders
  /// Later weights, in order of `from_pick` (the sources' own weights hold before the first).
  std::vector<MixturePhase> schedule = {};
};

/// Where a mixture stands: per-source counts, enough to resume exactly.
struct MixtureState {
  std::size_t epoch = 0;                ///< the epoch in progress
  std::size_t picks = 0;                ///< samples picked in the epoch, all sources together
  std::vector<std::size_t> consumed{};  ///< samples taken from each source in the epoch
  std::vector<std::uint64_t> tokens{};  ///< tokens taken from each source in the epoch
  std::size_t phase = 0;  ///< the weights in force: 0 the sources' own, k the schedule's k-th
  std::vector<std::size_t> phase_consumed{};  ///< `consumed` when that phase began
  std::vector<std::uint64_t> phase_tokens{};  ///< `tokens` when that phase began
  std::uint64_t fingerprint = 0;              ///< checked on use: the same mixture (0: not checked)

  friend bool operator==(const MixtureState&, const MixtureState&) = default;
};

/// One sample a mixture picked.
struct MixturePick {
  std::size_t source = 0;  ///< which source
  std::size_t index = 0;   ///< the sample's index in its source
  std::size_t length = 0;  ///< its tokens
};

/// A weighted blend of sources. Each pick takes the source furthest behind its share (its weight
/// times what was picked, less what it gave; the lowest-numbered on a tie), so every prefix of
/// the epoch is within one sample per source of the weights. Under a schedule, each phase counts
/// from its own first pick, so every prefix of a phase is within one sample of its weights. Within
/// a source, samples follow its own epoch order (a keyed bijection under (seed, source, epoch,
/// pass)).
class Mixture {
 public:
  /// A mixture of `sources` with `options`.
  Mixture(std::vector<MixtureSource> sources, MixtureOptions options)
      : sources_(std::move(sources)), options_(options) {
    if (sources_.empty()) throw UsageError("stoke: a mixture needs a source");
    for (std::size_t i = 0; i < sources_.size(); ++i) {
      if (sources_[i].weight == 0) {
        throw UsageError("stoke: mixture source " + std::to_string(i) + " has weight 0");
      }
      total_weight_ += sources_[i].weight;
    }
    std::size_t from = 0;
    for (std::size_t k = 0; k < options_.schedule.size(); ++k) {
      check_phase(k, from);
      from = options_.schedule[k].from_pick;
    }
    if (options_.samples_per_epoch == 0 && options_.exhaustion != SourceExhaustion::stop) {
      throw UsageError(
          "stoke: a mixture without samples_per_epoch must end when a source stops "
          "(SourceExhaustion::stop)");
    }
    fingerprint_ = compute_fingerprint();
  }

  /// The state at the start of `epoch`.
  [[nodiscard]] MixtureState start(std::size_t epoch) const {
    const std::vector<std::size_t> no_samples(sources_.size(), 0);
    const std::vector<std::uint64_t> no_tokens(sources_.size(), 0);
    return MixtureState{epoch, 0, no_samples, no_tokens, 0, no_samples, no_tokens, fingerprint()};
  }

  /// The next pick after `state`, which it advances; nothing at the epoch's end.
  [[nodiscard]] std::optional<MixturePick> next(MixtureState& state) const {
    check(state);
    if (options_.samples_per_epoch != 0 && state.picks >= options_.samples_per_epoch) {
      return std::nullopt;
    }
    if (const std::size_t phase = phase_at(state.picks); phase != state.phase) {
      state.phase = phase;
      state.phase_consumed = state.consumed;
      state.phase_tokens = state.tokens;
    }
    const std::size_t source = furthest_behind(state);
    const std::size_t size = sources_[source].lengths.size();
    const std::size_t taken = state.consumed[source];
    if (taken >= size && (options_.exhaustion != SourceExhaustion::wrap || size == 0)) {
      if (options_.exhaustion == SourceExhaustion::stop) return std::nullopt;
      throw InputError("stoke: mixture source " + std::to_string(source) + " ran out after " +
                       std::to_string(taken) + " samples, at pick " + std::to_string(state.picks) +
                       " of epoch " + std::to_string(state.epoch) +
                       " (SourceExhaustion::wrap or ::stop would allow it)");
    }
    const std::size_t pass = taken / size;
    const EpochOrder order =
        options_.shuffle
            ? EpochOrder(size, mix64(options_.seed ^ mix64(source + 1)), mix64(state.epoch) ^ pass)
            : EpochOrder(size);
    MixturePick pick{source, order(taken % size), 0};
    pick.length = sources_[source].lengths(pick.index);
    ++state.picks;
    ++state.consumed[source];
    state.tokens[source] += pick.length;
    return pick;
  }

  /// Identifies the mixture's parameters and sources, checked when a state is used.
  [[nodiscard]] std::uint64_t fingerprint() const noexcept { return fingerprint_; }

  /// The sources.
  [[nodiscard]] const std::vector<MixtureSource>& sources() const noexcept { return sources_; }
  /// The options.
  [[nodiscard]] const MixtureOptions& options() const noexcept { return options_; }
  /// The sum of the sources' own weights (those before any phase of the schedule).
  [[nodiscard]] std::uint64_t total_weight() const noexcept { return total_weight_; }

 private:
  /// The fingerprint of the sources (their lengths' fingerprints and weights) and options.
  [[nodiscard]] std::uint64_t compute_fingerprint() const {
    std::uint64_t hash = mix64(0x4D495854ull + sources_.size());  // "MIXT"
    for (const auto& source : sources_) {
      hash = mix64(hash ^ source.lengths.fingerprint());
      hash = mix64(hash ^ source.weight);
    }
    for (const auto& phase : options_.schedule) {
      hash = mix64(hash ^ phase.from_pick);
      for (const std::uint64_t weight : phase.weights) hash = mix64(hash ^ weight);
    }
    for (const std::uint64_t value : {static_cast<std::uint64_t>(options_.unit),
                                      static_cast<std::uint64_t>(options_.exhaustion),
                                      std::uint64_t{options_.samples_per_epoch},
                                      std::uint64_t{options_.shuffle}, options_.seed}) {
      hash = mix64(hash ^ value);
    }
    return hash;
  }

  /// A state of another mixture (another fingerprint or number of sources) is refused.
  void check(const MixtureState& state) const {
    if (state.fingerprint != 0 && state.fingerprint != fingerprint_) {
      throw StateError("stoke: the mixture state's fingerprint " +
                       std::to_string(state.fingerprint) + " is not this mixture's (" +
                       std::to_string(fingerprint_) +
                       "): other sources, weights, unit, exhaustion policy, epoch length or seed");
    }
    const std::size_t n = sources_.size();
    if (state.consumed.size() != n || state.tokens.size() != n ||
        state.phase_consumed.size() != n || state.phase_tokens.size() != n ||
        state.phase > options_.schedule.size()) {
      throw StateError("stoke: a mixture state of " + std::to_string(state.consumed.size()) +
                       " sources, for a mixture of " + std::to_string(sources_.size()));
    }
  }

  /// Phase `k` of the schedule (the `k`-th entry, from 1 on) is refused, naming it, when its
  /// weights do not fit the sources or it does not come after the phase before (at `from`).
  void check_phase(std::size_t k, std::size_t from) const {
    const MixturePhase& phase = options_.schedule[k];
    std::uint64_t total = 0;
    for (const std::uint64_t weight : phase.weights) total += weight;
    if (phase.weights.size() != sources_.size() || total == 0 || phase.from_pick <= from) {
      throw UsageError("stoke: mixture schedule phase " + std::to_string(k) + " (from pick " +
                       std::to_string(phase.from_pick) + ") needs " +
                       std::to_string(sources_.size()) +
                       " weights, not all 0, and a first pick after " + std::to_string(from));
    }
  }

  /// The phase in force at pick `pick` of an epoch (0: the sources' own weights).
  [[nodiscard]] std::size_t phase_at(std::size_t pick) const noexcept {
    std::size_t phase = 0;
    while (phase < options_.schedule.size() && options_.schedule[phase].from_pick <= pick) ++phase;
    return phase;
  }

  /// Source `source`'s weight in phase `phase`.
  [[nodiscard]] std::uint64_t weight(std::size_t phase, std::size_t source) const noexcept {
    return phase == 0 ? sources_[source].weight : options_.schedule[phase - 1].weights[source];
  }

  /// The source furthest behind its share of the phase in force: the largest weight_i x (what
  /// all gave) - total weight x (what i gave), counted from the phase's start in samples or
  /// tokens; the lowest-numbered on a tie.
  [[nodiscard]] std::size_t furthest_behind(const MixtureState& state) const {
    const bool samples = options_.unit == MixtureUnit::samples;
    std::uint64_t all = samples ? 1 : 0;  // by samples: the share after this pick
    std::uint64_t total_weight = 0;
    for (std::size_t i = 0; i < sources_.size(); ++i) {
      all += samples ? state.consumed[i] - state.phase_consumed[i]
                     : state.tokens[i] - state.phase_tokens[i];
      total_weight += weight(state.phase, i);
    }
    std::size_t best = 0;
    detail::MixtureDeficit best_deficit = 0;
    for (std::size_t i = 0; i < sources_.size(); ++i) {
      const std::uint64_t gave = samples ? state.consumed[i] - state.phase_consumed[i]
                                         : state.tokens[i] - state.phase_tokens[i];
      const auto deficit = static_cast<detail::MixtureDeficit>(weight(state.phase, i)) * all -
                           static_cast<detail::MixtureDeficit>(total_weight) * gave;
      if (i == 0 || deficit > best_deficit) {
        best = i;
        best_deficit = deficit;
      }
    }
    return best;
  }

  std::vector<MixtureSource> sources_;
  MixtureOptions options_;
  std::uint64_t total_weight_ = 0;
  std::uint64_t fingerprint_ = 0;
};

/// The format a mixture state's JSON says it is in.
inline constexpr const char* mixture_state_format = "stoke.mixture_state.v1";

/// The state as JSON.
inline nlohmann::json to_json(const MixtureState& state) {
  return {{"format", mixture_state_format},
          {"epoch", state.epoch},
          {"picks", state.picks},
          {"consumed", state.consumed},
          {"tokens", state.tokens},
          {"phase", state.phase},
          {"phase_consumed", state.phase_consumed},
          {"phase_tokens", state.phase_tokens},
          {"fingerprint", state.fingerprint}};
}

/// Reads a mixture state from JSON; a missing or ill-typed field is an `InputError` naming it
/// and `where`.
inline MixtureState mixture_state_from_json(const nlohmann::json& json,
                                            const std::string& where = "mixture state") {
  const JsonFields fields(json, where);
  if (fields.at("format") != mixture_state_format) {
    throw InputError("stoke: " + where + " has format " + json_excerpt(fields.at("format")) +
                     ", expected \"" + mixture_state_format + "\"");
  }
  const auto counts = [&](const char* name) {
    const nlohmann::json& array = fields.at(name);
    if (!array.is_array()) {
      throw InputError("stoke: " + where + " field \"" + name +
                       "\" is not an array: " + json_excerpt(array));
    }
    std::vector<std::uint64_t> out;
    for (std::size_t i = 0; i < array.size(); ++i) {
      if (!array[i].is_number_unsigned()) {
        throw InputError("stoke: " + where + " field \"" + name + "\" element " +
                         std::to_string(i) + " is not a count: " + json_excerpt(array[i]));
      }
      out.push_back(array[i].get<std::uint64_t>());
    }
    return out;
  };
  const auto sizes = [&](const char* name) {
    const std::vector<std::uint64_t> values = counts(name);
    return std::vector<std::size_t>(values.begin(), values.end());
  };
  MixtureState state{.epoch = fields.size("epoch"),
                     .picks = fields.size("picks"),
                     .consumed = sizes("consumed"),
                     .tokens = counts("tokens"),
                     .phase = fields.size("phase"),
                     .phase_consumed = sizes("phase_consumed"),
                     .phase_tokens = counts("phase_tokens"),
                     .fingerprint = fields.count("fingerprint")};
  return state;
}

}  // namespace stoke

#pragma once
/// @file
/// `Mixture`: a weighted blend of several sources in a deterministic interleaving with exact
/// proportions at every prefix of the epoch (the largest-deficit rule, not random draws that
/// drift), weighted by samples or by tokens, resumable exactly from per-source counts.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
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

/// The parameters of a `Mixture`.
struct MixtureOptions {
  MixtureUnit unit = MixtureUnit::samples;                ///< what the weights share out
  SourceExhaustion exhaustion = SourceExhaustion::error;  ///< when a source runs out
  std::size_t samples_per_epoch = 0;                      ///< picks per epoch (0: until one stops)
  bool shuffle = true;                                    ///< shuffle each source's order
  std::uint64_t seed = 0;                                 ///< key of the sources' orders
};

/// Where a mixture stands: per-source counts, enough to resume exactly.
struct MixtureState {
  std::size_t epoch = 0;                ///< the epoch in progress
  std::size_t picks = 0;                ///< samples picked in the epoch, all sources together
  std::vector<std::size_t> consumed{};  ///< samples taken from each source in the epoch
  std::vector<std::uint64_t> tokens{};  ///< tokens taken from each source in the epoch
  std::uint64_t fingerprint = 0;        ///< checked on use: the same mixture (0: not checked)

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
/// the epoch is within one sample per source of the weights. Within a source, samples follow its
/// own epoch order (a keyed bijection under (seed, source, epoch, pass)).
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
    if (options_.samples_per_epoch == 0 && options_.exhaustion != SourceExhaustion::stop) {
      throw UsageError(
          "stoke: a mixture without samples_per_epoch must end when a source stops "
          "(SourceExhaustion::stop)");
    }
    fingerprint_ = compute_fingerprint();
  }

  /// The state at the start of `epoch`.
  [[nodiscard]] MixtureState start(std::size_t epoch) const {
    return MixtureState{epoch, 0, std::vector<std::size_t>(sources_.size(), 0),
                        std::vector<std::uint64_t>(sources_.size(), 0), fingerprint()};
  }

  /// The next pick after `state`, which it advances; nothing at the epoch's end.
  [[nodiscard]] std::optional<MixturePick> next(MixtureState& state) const {
    check(state);
    if (options_.samples_per_epoch != 0 && state.picks >= options_.samples_per_epoch) {
      return std::nullopt;
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
  /// The sum of the weights.
  [[nodiscard]] std::uint64_t total_weight() const noexcept { return total_weight_; }

 private:
  /// The fingerprint of the sources (their lengths' fingerprints and weights) and options.
  [[nodiscard]] std::uint64_t compute_fingerprint() const {
    std::uint64_t hash = mix64(0x4D495854ull + sources_.size());  // "MIXT"
    for (const auto& source : sources_) {
      hash = mix64(hash ^ source.lengths.fingerprint());
      hash = mix64(hash ^ source.weight);
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
    if (state.consumed.size() != sources_.size() || state.tokens.size() != sources_.size()) {
      throw StateError("stoke: a mixture state of " + std::to_string(state.consumed.size()) +
                       " sources, for a mixture of " + std::to_string(sources_.size()));
    }
  }

  /// The source furthest behind its share: the largest weight_i x (what all gave) - total
  /// weight x (what i gave), in samples or tokens; the lowest-numbered on a tie.
  [[nodiscard]] std::size_t furthest_behind(const MixtureState& state) const {
    std::uint64_t all = 0;
    for (std::size_t i = 0; i < sources_.size(); ++i) {
      all += options_.unit == MixtureUnit::samples ? state.consumed[i] : state.tokens[i];
    }
    if (options_.unit == MixtureUnit::samples) ++all;  // the share after this pick
    std::size_t best = 0;
    detail::MixtureDeficit best_deficit = 0;
    for (std::size_t i = 0; i < sources_.size(); ++i) {
      const std::uint64_t gave =
          options_.unit == MixtureUnit::samples ? state.consumed[i] : state.tokens[i];
      const auto deficit = static_cast<detail::MixtureDeficit>(sources_[i].weight) * all -
                           static_cast<detail::MixtureDeficit>(total_weight_) * gave;
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
  return {{"format", mixture_state_format}, {"epoch", state.epoch},
          {"picks", state.picks},           {"consumed", state.consumed},
          {"tokens", state.tokens},         {"fingerprint", state.fingerprint}};
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
  MixtureState state{.epoch = fields.size("epoch"),
                     .picks = fields.size("picks"),
                     .fingerprint = fields.count("fingerprint")};
  for (const char* name : {"consumed", "tokens"}) {
    const nlohmann::json& counts = fields.at(name);
    if (!counts.is_array()) {
      throw InputError("stoke: " + where + " field \"" + name +
                       "\" is not an array: " + json_excerpt(counts));
    }
    for (std::size_t i = 0; i < counts.size(); ++i) {
      if (!counts[i].is_number_unsigned()) {
        throw InputError("stoke: " + where + " field \"" + name + "\" element " +
                         std::to_string(i) + " is not a count: " + json_excerpt(counts[i]));
      }
      const auto value = counts[i].get<std::uint64_t>();
      if (std::string_view(name) == "consumed") {
        state.consumed.push_back(static_cast<std::size_t>(value));
      } else {
        state.tokens.push_back(value);
      }
    }
  }
  return state;
}

}  // namespace stoke

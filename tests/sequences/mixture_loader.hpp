// Mixtures run by stoke's own loader, for the suites of tests/sequences: random shapes of
// sources, weights, unit, schedule, exhaustion policy, plan and split; the loader over the
// sources' concatenation (one `TokenCorpus`, whose tokens name their document), and what the
// mixture alone picks, to check the loader's batches against.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <stoke/stoke.hpp>

#include "planned_loader.hpp"
#include "token_corpus.hpp"

namespace stoke::testing {

/// One random combination of sources, mixture, plan, split and loader.
struct MixtureShape {
  std::vector<std::vector<std::int32_t>> sources;  ///< each source's lengths (at least 1 token)
  std::vector<std::uint64_t> weights;
  MixtureOptions options;
  PlanShape plan;  ///< the plan, split and loader (its `lengths` unused)

  /// Every source's documents, in order: the loader's dataset.
  [[nodiscard]] std::vector<std::int32_t> concatenated() const {
    std::vector<std::int32_t> out;
    for (const auto& source : sources) out.insert(out.end(), source.begin(), source.end());
    return out;
  }
  /// The first document of each source in the concatenation, and the total at the end.
  [[nodiscard]] std::vector<std::size_t> offsets() const {
    std::vector<std::size_t> out{0};
    for (const auto& source : sources) out.push_back(out.back() + source.size());
    return out;
  }
  /// The mixture (its sources view `sources`: the shape must outlive it).
  [[nodiscard]] Mixture mixture() const {
    std::vector<MixtureSource> out;
    for (std::size_t i = 0; i < sources.size(); ++i) {
      out.push_back({DocumentLengths(std::span<const std::int32_t>(sources[i])), weights[i]});
    }
    return Mixture(std::move(out), options);
  }
  [[nodiscard]] std::string describe() const {
    std::ostringstream out;
    out << "sources=";
    for (std::size_t i = 0; i < sources.size(); ++i) {
      out << sources[i].size() << "x" << weights[i] << ",";
    }
    out << " unit=" << static_cast<int>(options.unit)
        << " exhaustion=" << static_cast<int>(options.exhaustion)
        << " samples=" << options.samples_per_epoch << " phases=" << options.schedule.size() << " "
        << plan.describe();
    return out.str();
  }
};

/// A random shape from `rng`: 1 to 4 sources of 1 to 40 documents, weights 1 to 5, by samples
/// or tokens, an epoch of a set number of picks (wrapping) or until a source runs out, up to
/// two later phases of weights.
inline MixtureShape random_mixture_shape(std::mt19937_64& rng) {
  const auto pick = [&](std::size_t low, std::size_t high) {
    return std::uniform_int_distribution<std::size_t>(low, high)(rng);
  };
  MixtureShape shape;
  shape.plan = random_plan_shape(rng);
  const std::size_t count = pick(1, 4);
  for (std::size_t i = 0; i < count; ++i) {
    auto lengths = random_lengths(pick(1, 40), pick(1, 60), shape.plan.seed + i);
    for (auto& length : lengths) length = std::max<std::int32_t>(length, 1);
    shape.sources.push_back(std::move(lengths));
    shape.weights.push_back(pick(1, 5));
  }
  shape.options.unit = pick(0, 1) == 0 ? MixtureUnit::samples : MixtureUnit::tokens;
  shape.options.seed = shape.plan.seed ^ 0x5EED;
  if (pick(0, 2) == 0) {
    shape.options.exhaustion = SourceExhaustion::stop;
  } else {
    shape.options.exhaustion = SourceExhaustion::wrap;
    shape.options.samples_per_epoch = pick(1, 150);
  }
  std::size_t from = 0;
  for (std::size_t k = pick(0, 2); k > 0; --k) {
    from += pick(1, 40);
    MixturePhase phase{.from_pick = from, .weights = {}};
    for (std::size_t i = 0; i < count; ++i) phase.weights.push_back(pick(0, 4));
    phase.weights[pick(0, count - 1)] += 1;  // not all 0
    shape.options.schedule.push_back(std::move(phase));
  }
  return shape;
}

/// The planner of a shape's loader, whichever its kind: a `ReportingPlanner`.
class AnyMixturePlanner {
  /// `f` of the planner of the shape's kind.
  template <class F>
  decltype(auto) visit(F&& f) const {
    if (concat_) return f(*concat_);
    if (fit_) return f(*fit_);
    return f(*bucket_);
  }

 public:
  explicit AnyMixturePlanner(const MixtureShape& shape) : kind_(shape.plan.kind) {
    const PlanShape& plan = shape.plan;
    switch (kind_) {
      case PlanKind::concat:
      case PlanKind::concat_shifted:
        concat_.emplace(mixture_planner<ConcatPlanner>(
            shape.mixture(), ConcatOptions{.sequence_length = plan.sequence_length,
                                           .shifted = kind_ == PlanKind::concat_shifted,
                                           .rows_per_batch = plan.rows,
                                           .window_batches = plan.window}));
        break;
      case PlanKind::first_fit:
      case PlanKind::best_fit:
        fit_.emplace(mixture_planner<FitPlanner>(
            shape.mixture(),
            FitOptions{.sequence_length = plan.sequence_length,
                       .rows_per_batch = plan.rows,
                       .window_documents = plan.window,
                       .fit = kind_ == PlanKind::best_fit ? PackFit::best : PackFit::first}));
        break;
      default:
        bucket_.emplace(mixture_planner<BucketPlanner>(
            shape.mixture(),
            BucketOptions{
                .budget = 64 * plan.rows, .boundaries = {8, 24}, .window_documents = plan.window}));
    }
  }

  [[nodiscard]] WindowPlan plan_window(std::size_t epoch, const WindowStart& start) const {
    return visit([&](const auto& p) { return p.plan_window(epoch, start); });
  }
  [[nodiscard]] std::uint64_t fingerprint() const {
    return visit([](const auto& p) { return p.fingerprint(); });
  }
  [[nodiscard]] static constexpr bool reports_state() { return true; }
  [[nodiscard]] nlohmann::json describe_state(const PlanPoint& point) const {
    return visit([&](const auto& p) { return p.describe_state(point); });
  }
  void check_parameters(const nlohmann::json& saved) const {
    visit([&](const auto& p) { p.check_parameters(saved); });
  }
  void check_state(const nlohmann::json& saved, const PlanPoint& point) const {
    visit([&](const auto& p) { p.check_state(saved, point); });
  }

 private:
  PlanKind kind_;
  std::optional<MixturePlanner<ConcatPlanner>> concat_;
  std::optional<MixturePlanner<FitPlanner>> fit_;
  std::optional<MixturePlanner<BucketPlanner>> bucket_;
};

/// The multithread loader of a mixture over the sources' concatenation.
using MixtureLoader =
    MultiThreadLoader<TokenCorpus, PlannedBatcher<AnyMixturePlanner>, cpu::Backend>;

/// The loader of `shape` over `corpus` (its sources' concatenation) with `workers` threads.
inline MixtureLoader mixture_loader(const MixtureShape& shape, const TokenCorpus& corpus,
                                    std::size_t workers) {
  LoaderOptions options;
  options.remainder = shape.plan.remainder;
  options.num_workers = workers;
  options.queue_depth = 3;
  return MixtureLoader(
      corpus, PlannedBatcher<AnyMixturePlanner>(AnyMixturePlanner(shape), test_pad_id), options);
}

/// What the mixture alone picks in `epoch`: documents of the concatenation, in order.
inline std::vector<std::size_t> mixture_picks(const MixtureShape& shape, std::size_t epoch) {
  const Mixture mixture = shape.mixture();
  const std::vector<std::size_t> offsets = shape.offsets();
  MixtureState state = mixture.start(epoch);
  std::vector<std::size_t> out;
  while (const auto pick = mixture.next(state)) out.push_back(offsets[pick->source] + pick->index);
  return out;
}

}  // namespace stoke::testing

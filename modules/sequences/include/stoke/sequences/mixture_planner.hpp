#pragma once
/// @file
/// `MixturePlanner`: a `Mixture` of several sources as the documents of a pad, pack or bucket
/// plan, run by stoke's own loader through `PlannedBatcher`. The C++ API:
///
///     stoke::TokenStore web("web"), code("code");               // any datasets of tokens
///     auto lengths_of = [](stoke::TokenStore store) {
///       return stoke::DocumentLengths(store.size(), [store](std::size_t i) {
///         return std::size_t{store.lengths()[i]}; });
///     };
///     stoke::Mixture mixture({{lengths_of(web), 3}, {lengths_of(code), 1}},
///                            {.exhaustion = stoke::SourceExhaustion::wrap,
///                             .samples_per_epoch = 100000, .seed = 7});
///     auto planner = stoke::mixture_planner<stoke::ConcatPlanner>(
///         mixture, stoke::ConcatOptions{.sequence_length = 2048, .rows_per_batch = 8});
///     stoke::LoaderOptions options;
///     options.remainder = stoke::Remainder::pad;
///     stoke::MultiThreadLoader<stoke::ConcatDataset<stoke::TokenStore>,
///                              stoke::PlannedBatcher<decltype(planner)>, stoke::cpu::Backend>
///         loader(stoke::concat(std::vector{web, code}), stoke::PlannedBatcher(planner), options);
///
/// The loader's dataset is the sources' concatenation, in the mixture's order (`concat` or
/// `compose`): a batch's `PackedBatch::documents` are indices into it (`source_of` names the
/// source). Every guarantee of a planned loader holds (equal batch counts on every device and
/// rank, the same bits for any worker count, exact and elastic resume), and the epoch's
/// documents are the mixture's picks in order, so every prefix of the picks keeps the weights.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include <stoke/core/error.hpp>
#include <stoke/core/fork.hpp>
#include <stoke/core/rng.hpp>
#include <stoke/sequences/mixture.hpp>
#include <stoke/sequences/mixture_account.hpp>
#include <stoke/sequences/mixture_walk.hpp>
#include <stoke/sequences/planned_epoch.hpp>
#include <stoke/sequences/sequence_plan.hpp>

namespace stoke {

/// Plans a `Mixture`'s epochs with an `Inner` planner (`ConcatPlanner`, `FitPlanner`,
/// `BucketPlanner`, ...): epoch `e`'s documents are the mixture's picks of `e` in order (the
/// inner planner runs over them unshuffled: the mixture orders them), and each planned piece
/// names its document's index in the sources' concatenation. A pure function of (seed, epoch,
/// weights, schedule, the sources' lengths, the inner options), planned per window.
///
/// Costs: an epoch's first use walks its picks once (see `MixtureWalk`: time linear in its
/// picks times its sources; a checkpoint every 1024 picks kept), since the number of batches of
/// any plan of it depends on every pick before. After that, batch `k` is planned from its
/// window's start, its picks replayed from the checkpoint before it: a resume never replays
/// the epoch. Copies share the walk and the inner planners.
///
/// Its account in a loader's state (`ReportingPlanner`) is the mixture's parameters and the
/// documents and tokens of each source delivered (`MixtureCounts`); a restore under other
/// weights, schedule, sources, unit, policy or seed is refused naming what changed.
template <WindowPlanner Inner>
class MixturePlanner {
 public:
  /// Makes the inner planner of one epoch's picks (their lengths, in order).
  using MakeInner = std::function<Inner(DocumentLengths)>;

  /// Plans `mixture`'s epochs with the planners `make_inner` makes.
  MixturePlanner(Mixture mixture, MakeInner make_inner) : shared_(std::make_shared<Shared>()) {
    shared_->offsets.push_back(0);
    for (const MixtureSource& source : mixture.sources()) {
      shared_->offsets.push_back(shared_->offsets.back() + source.lengths.size());
    }
    const Inner probe = make_inner(DocumentLengths(0, no_length, 0));  // its options only
    if constexpr (requires { probe.options().shifted; }) {
      shifted_ = probe.options().shifted;
    } else if constexpr (requires { probe.shifted(); }) {
      shifted_ = probe.shifted();
    }
    fingerprint_ = mix64(mixture.fingerprint() ^ mix64(probe.fingerprint() ^ 0x4D49585Bull));
    shared_->parameters = mixture_parameters(mixture);
    shared_->walk = std::make_shared<const MixtureWalk>(std::move(mixture));
    shared_->make_inner = std::move(make_inner);
  }

  /// The plan of the window at `start` of `epoch`, its pieces naming documents of the sources'
  /// concatenation.
  [[nodiscard]] WindowPlan plan_window(std::size_t epoch, const WindowStart& start) const {
    WindowPlan plan = inner(epoch)->plan_window(epoch, start);
    for (PlannedBatch& batch : plan.batches) {
      for (PlannedRow& row : batch.rows) {
        for (DocumentPiece& piece : row.pieces) {
          const MixturePick pick = shared_->walk->pick(epoch, piece.document);
          piece.document = shared_->offsets[pick.source] + pick.index;
        }
      }
    }
    return plan;
  }

  /// What `plan_window(epoch, start)` says of its window, without planning it.
  [[nodiscard]] WindowSkip skip_window(std::size_t epoch, const WindowStart& start) const
    requires SkippingPlanner<Inner>
  {
    return inner(epoch)->skip_window(epoch, start);
  }
  /// The number of batches of `epoch`'s plan.
  [[nodiscard]] std::size_t epoch_batches(std::size_t epoch) const
    requires SkippingPlanner<Inner>
  {
    return inner(epoch)->epoch_batches(epoch);
  }

  /// Identifies the mixture (sources, weights, schedule, options) and the inner plan's options.
  [[nodiscard]] std::uint64_t fingerprint() const noexcept { return fingerprint_; }
  /// The mixture.
  [[nodiscard]] const Mixture& mixture() const noexcept { return shared_->walk->mixture(); }
  /// The picks of the mixture's epochs.
  [[nodiscard]] const MixtureWalk& walk() const noexcept { return *shared_->walk; }

  /// Which source document `document` of the concatenation is from, and its index there.
  [[nodiscard]] std::pair<std::size_t, std::size_t> source_of(std::size_t document) const {
    const auto& offsets = shared_->offsets;
    if (document >= offsets.back()) {
      throw UsageError("stoke: document " + std::to_string(document) +
                       " is past the mixture's sources (" + std::to_string(offsets.back()) +
                       " documents)");
    }
    const auto after = std::upper_bound(offsets.begin(), offsets.end(), document);
    const auto source = static_cast<std::size_t>(after - offsets.begin()) - 1;
    return {source, document - offsets[source]};
  }

  /// The documents and tokens of each source that `point` delivered (see `MixtureCounts`): the
  /// counts at its window's start (from the checkpoint before it), and those its window's
  /// delivered batches begin (a shifted row's last slot, the next row's first input, begins
  /// none).
  [[nodiscard]] MixtureCounts counts(const PlanPoint& point) const {
    const MixtureWalk& walk = *shared_->walk;
    const std::size_t sources = mixture().sources().size();
    MixtureCounts out{std::vector<std::uint64_t>(sources, 0),
                      std::vector<std::uint64_t>(sources, 0)};
    if (point.consumed == 0) return out;
    const std::size_t picks = walk.picks(point.epoch);
    const std::size_t position = point.ended ? picks : point.cursor.start.position;
    const MixtureState before = walk.state_at(point.epoch, std::min(position, picks));
    out.samples.assign(before.consumed.begin(), before.consumed.end());
    out.tokens = before.tokens;
    const auto count = [&](std::size_t source, std::size_t length) {
      ++out.samples[source];
      out.tokens[source] += length;
    };
    if (!point.ended && point.cursor.start.token > 0 && position < picks) {
      const MixturePick begun = walk.pick(point.epoch, position);  // cut by the window's start
      count(begun.source, begun.length);
    }
    for (const PlannedBatch& batch : point.delivered) {
      for (const PlannedRow& row : batch.rows) {
        std::size_t slot = 0;  // a shifted row's last slot is the next row's first input
        for (const DocumentPiece& piece : row.pieces) {
          if (piece.begin == 0 && (!shifted_ || slot + 1 < batch.width)) {
            const auto [source, index] = source_of(piece.document);
            count(source, mixture().sources()[source].lengths(index));
          }
          slot += piece.size();
        }
      }
    }
    return out;
  }

  /// It reports its account (`ReportingPlanner`).
  [[nodiscard]] static constexpr bool reports_state() noexcept { return true; }
  /// The account of `point`: the mixture's parameters and `counts(point)`.
  [[nodiscard]] nlohmann::json describe_state(const PlanPoint& point) const {
    return mixture_account(shared_->parameters, counts(point));
  }
  /// Refuses `saved` unless it was saved under this mixture's parameters, naming what changed.
  void check_parameters(const nlohmann::json& saved) const {
    check_mixture_parameters(shared_->parameters, saved);
  }
  /// Refuses `saved` unless it is the account of `point`.
  void check_state(const nlohmann::json& saved, const PlanPoint& point) const {
    check_mixture_parameters(shared_->parameters, saved);
    check_mixture_counts(saved, counts(point), point.epoch, point.consumed);
  }

 private:
  static std::size_t no_length(std::size_t /*document*/) { return 0; }

  /// The inner planner of `epoch`'s picks: kept (for the two epochs used last), or made.
  [[nodiscard]] std::shared_ptr<const Inner> inner(std::size_t epoch) const {
    {
      const std::lock_guard lock(shared_->mutex);
      if (const auto found = shared_->inners.find(epoch); found != shared_->inners.end()) {
        return found->second;
      }
    }
    const std::shared_ptr<const MixtureWalk> walk = shared_->walk;
    DocumentLengths lengths(
        walk->picks(epoch),
        [walk, epoch](std::size_t position) { return walk->pick(epoch, position).length; },
        mix64(fingerprint_ ^ mix64(epoch)));
    auto made = std::make_shared<const Inner>(shared_->make_inner(std::move(lengths)));
    const std::lock_guard lock(shared_->mutex);
    if (const auto found = shared_->inners.find(epoch); found != shared_->inners.end()) {
      return found->second;
    }
    detail::keep_nearest_epochs(shared_->inners, epoch, MixtureWalk::cached_epochs - 1);
    shared_->inners.emplace(epoch, made);
    return made;
  }

  /// What copies share.
  struct Shared {
    std::shared_ptr<const MixtureWalk> walk;
    MakeInner make_inner;
    std::vector<std::size_t> offsets;  ///< each source's first document in the concatenation
    nlohmann::json parameters;         ///< the mixture's parameters in its account, made once
    detail::ForkGuarded mutex;         ///< guards `inners`
    std::map<std::size_t, std::shared_ptr<const Inner>> inners;
  };

  std::shared_ptr<Shared> shared_;
  std::uint64_t fingerprint_ = 0;
  bool shifted_ = false;  ///< the inner plan's rows overlap by one slot (shifted targets)
};

/// A `MixturePlanner` of `mixture` whose inner planner is `Inner(lengths, options)`, the
/// options' `shuffle` turned off (the mixture orders the documents; its own `shuffle` shuffles
/// each source).
template <WindowPlanner Inner, class Options>
  requires std::constructible_from<Inner, DocumentLengths, Options>
[[nodiscard]] MixturePlanner<Inner> mixture_planner(Mixture mixture, Options options) {
  options.shuffle = false;
  return MixturePlanner<Inner>(std::move(mixture), [options](DocumentLengths lengths) {
    return Inner(std::move(lengths), options);
  });
}

}  // namespace stoke

#pragma once
/// @file
/// `EpochPlan`: which positions of each epoch one loader reads. A loader's positions are the
/// epoch order, narrowed by slices and shares (interleaved splits), batched, with the
/// remainder dropped, padded or kept as a partial batch. One rule serves every level:
/// ranks, devices and workers all take batch-aligned shares of the same sequence.
///
/// A loader whose batcher plans its batches (`PlanBatcher`: padded, packed or bucketed
/// sequences) has a planned `EpochPlan`: its positions are the batches of each epoch's plan
/// (as many as `PlannedBatches::epoch_batches` says for that epoch), one per loader batch, so
/// slices, shares, padding, dropping and resume work on them as on samples.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <numeric>
#include <optional>
#include <span>
#include <string>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

#include <stoke/core/error.hpp>
#include <stoke/data/remainder.hpp>
#include <stoke/data/shard_ranks.hpp>
#include <stoke/data/sharded_order.hpp>

namespace stoke {

/// Positions `[begin, end)` of the parent sequence.
struct PositionSlice {
  std::size_t begin = 0;
  std::size_t end = 0;
};

/// Every `count`-th batch of the parent sequence, starting with batch `index`.
struct SplitShare {
  std::size_t count = 1;
  std::size_t index = 0;
};

/// This loader is rank `index` of `count` ranks that each take whole shards (see
/// `share_by_shards`).
struct ShardRanks {
  std::size_t count = 1;
  std::size_t index = 0;
};

namespace detail {
/// A narrowing of a plan: a slice or a share of the sequence before it.
using Narrowing = std::variant<PositionSlice, SplitShare>;

/// How `EpochPlan::locate` maps a loader's positions back through its narrowings.
struct NarrowingTrace {
  std::size_t sequence_length = 0;          ///< positions after all narrowings, before batching
  std::vector<std::size_t> parent_lengths;  ///< length of the parent of each narrowing
  std::vector<std::size_t> slice_begins;    ///< clamped begin of each slice (0 for shares)
  /// Under `ShardRanks`: this rank's sequence of the epoch's positions (else none).
  std::shared_ptr<const RankSequence> ranks;
  /// Under `ShardRanks` after a restore onto other ranks: the narrowings in force (the ranks'
  /// interleaved share first); else none, and the plan's own apply.
  std::shared_ptr<const std::vector<Narrowing>> narrowings;
  std::size_t rank_longest = 0;     ///< under `ShardRanks`: the longest rank's positions left
  std::size_t epoch_positions = 0;  ///< positions of the whole epoch (its planned batches)
};
}  // namespace detail

/// Where a state resumes an epoch (see `LoaderState`).
struct ResumePoint {
  std::size_t consumed = 0;       ///< positions of the epoch (or of the ranks' leftovers) consumed
  std::size_t shard_ranks = 0;    ///< ranks of the shard assignment in force (0: interleaved)
  std::size_t rank_consumed = 0;  ///< positions of each rank's own sequence consumed
};

/// The shape of one epoch of one loader: what `loader.layout(epoch)` reports.
struct EpochLayout {
  std::size_t epoch = 0;         ///< which epoch
  std::size_t offset = 0;        ///< positions of the epoch skipped because they were consumed
  std::size_t length = 0;        ///< positions this loader reads, padding included
  std::size_t num_batches = 0;   ///< batches this loader yields
  std::size_t padding = 0;       ///< items this loader yields that repeat other positions
  std::size_t dropped = 0;       ///< positions no share of the split reads this epoch
  std::size_t pad_from = 0;      ///< first padded position (padding is always a suffix)
  detail::NarrowingTrace trace;  ///< internal: how the plan locates this loader's positions
};

/// The batches of a planned epoch (see `PlanBatcher`): how many each epoch has, and a
/// fingerprint of the plan, checked when a state is restored.
struct PlannedBatches {
  /// The number of batches of an epoch's plan (called with the epoch; memoised by the caller's
  /// plan, since it may walk the epoch's plan windows).
  std::function<std::size_t(std::size_t)> epoch_batches;
  std::uint64_t fingerprint = 0;  ///< identifies the plan (nonzero)
  /// The plan's own account of where (epoch, batches consumed) leave it, for
  /// `LoaderState::plan_state` (a mixture's per-source counts); empty: none.
  std::function<nlohmann::json(std::size_t, std::size_t)> describe{};
  /// Refuses a saved account (`LoaderState::plan_state`) of (epoch, batches consumed) that this
  /// plan would not give, naming what changed; empty: none.
  std::function<void(const nlohmann::json&, std::size_t, std::size_t)> check{};
};

/// Which positions of every epoch a loader reads; a small value copied into each slice.
class EpochPlan {
 public:
  /// A plan over `dataset_size` positions in batches of `batch_size`.
  EpochPlan(std::size_t dataset_size, std::size_t batch_size, Remainder remainder)
      : dataset_size_(dataset_size), batch_size_(batch_size), remainder_(remainder) {
    if (batch_size == 0) throw UsageError("stoke: batch size must be at least 1");
  }

  /// A planned plan over a dataset of `dataset_size` samples: each epoch's positions are the
  /// batches of its plan, one per loader batch.
  EpochPlan(std::size_t dataset_size, PlannedBatches planned, Remainder remainder)
      : dataset_size_(dataset_size),
        batch_size_(1),
        remainder_(remainder),
        planned_(std::make_shared<const PlannedBatches>(std::move(planned))) {
    if (!planned_->epoch_batches) throw UsageError("stoke: a planned epoch needs its batch count");
  }

  /// Narrows to positions `[begin, end)` of the current sequence (clamped to its length).
  void add_slice(std::size_t begin, std::size_t end) {
    if (end < begin) {
      throw UsageError("stoke: slice(" + std::to_string(begin) + ", " + std::to_string(end) +
                       ") has end before begin");
    }
    narrowings_.emplace_back(PositionSlice{begin, end});
  }

  /// Narrows to every `count`-th batch starting at `index`; two shares in a row merge into one,
  /// so a rank-then-device split pads or drops once, not at each level.
  void add_share(std::size_t count, std::size_t index) {
    if (count == 0 || index >= count) {
      throw UsageError("stoke: share " + std::to_string(index) + " of " + std::to_string(count) +
                       " does not exist");
    }
    if (remainder_ == Remainder::partial) {
      throw UsageError(
          "stoke: splitting needs Remainder::drop or Remainder::pad, so that every share runs "
          "the same number of batches (the loader was built with Remainder::partial)");
    }
    if (!narrowings_.empty()) {
      if (auto* last = std::get_if<SplitShare>(&narrowings_.back())) {
        // Share `index` of `count` of share `last->index` of `last->count`: batch t of the result
        // is parent batch (t * count + index) * last->count + last->index.
        last->index += last->count * index;
        last->count *= count;
        return;
      }
    }
    narrowings_.emplace_back(SplitShare{count, index});
  }

  /// Makes this plan rank `index` of `count` ranks that each take whole shards of every
  /// epoch (see `ShardAssignment`), dealt from the shard-aware order of `table` under `seed`;
  /// must come before any other narrowing. Devices and workers then split the rank's sequence
  /// as usual, and every rank has the same number of batches (padding or dropping within the
  /// rank's own shards).
  void add_shard_ranks(std::size_t count, std::size_t index,
                       std::shared_ptr<const ShardTable> table, std::uint64_t seed) {
    if (count == 0 || index >= count) {
      throw UsageError("stoke: rank " + std::to_string(index) + " of " + std::to_string(count) +
                       " does not exist");
    }
    if (planned_) {
      throw UsageError(
          "stoke: the shard rank split takes whole shards of samples; a planned loader's "
          "positions are planned batches: split it with share or split instead");
    }
    if (!table) {
      throw UsageError(
          "stoke: the shard rank split needs a shard-aware order: build the loader with "
          "shuffle_shards(seed) over a dataset with shard_begins()");
    }
    if (shard_ranks_ || !narrowings_.empty()) {
      throw UsageError(
          "stoke: the shard rank split must be a loader's first split (ranks, then devices)");
    }
    if (remainder_ == Remainder::partial) {
      throw UsageError(
          "stoke: splitting needs Remainder::drop or Remainder::pad, so that every rank runs "
          "the same number of batches (the loader was built with Remainder::partial)");
    }
    shard_ranks_ = ShardRanks{count, index};
    shard_table_ = std::move(table);
    shard_seed_ = seed;
  }

  /// In `epoch`, start the epoch's sequence at `offset` (the positions before it were consumed).
  void resume_at(std::size_t epoch, std::size_t offset) noexcept {
    resume_at(epoch, ResumePoint{.consumed = offset});
  }
  /// In `epoch`, resume at `point`.
  void resume_at(std::size_t epoch, const ResumePoint& point) noexcept {
    resume_epoch_ = epoch;
    resume_offset_ = point.consumed;
    resume_shard_ranks_ = point.shard_ranks;
    resume_rank_consumed_ = point.rank_consumed;
  }

  /// The shard rank split of this plan, if it has one.
  [[nodiscard]] const std::optional<ShardRanks>& shard_ranks() const noexcept {
    return shard_ranks_;
  }

  /// Where `delivered` batches of every share of the split into the epoch of `layout` leave it:
  /// what a state records; `std::nullopt` when only padding is left.
  [[nodiscard]] std::optional<ResumePoint> resume_point(const EpochLayout& layout,
                                                        std::size_t delivered) const {
    const std::size_t taken = delivered * batch_size_ * share_count(layout);
    const std::size_t at = layout.offset + taken;
    if (!shard_ranks_) {
      if (at >= layout.trace.epoch_positions) return std::nullopt;
      return ResumePoint{.consumed = at};
    }
    if (layout.trace.narrowings) {  // the ranks' leftovers, interleaved
      if (at >= layout.trace.ranks->length()) return std::nullopt;
      return ResumePoint{at, resume_shard_ranks_, resume_rank_consumed_};
    }
    if (at >= layout.offset + layout.trace.rank_longest) return std::nullopt;
    return ResumePoint{.consumed = 0, .shard_ranks = shard_ranks_->count, .rank_consumed = at};
  }

  [[nodiscard]] std::size_t dataset_size() const noexcept { return dataset_size_; }
  /// Whether the positions are planned batches (a `PlanBatcher`'s loader).
  [[nodiscard]] bool planned() const noexcept { return planned_ != nullptr; }
  /// The plan's fingerprint (0 for a plan of samples).
  [[nodiscard]] std::uint64_t fingerprint() const noexcept {
    return planned_ ? planned_->fingerprint : 0;
  }
  /// The plan's own account of `consumed` batches of `epoch` (null for most plans).
  [[nodiscard]] nlohmann::json describe(std::size_t epoch, std::size_t consumed) const {
    return planned_ && planned_->describe ? planned_->describe(epoch, consumed) : nlohmann::json{};
  }
  /// Refuses `saved`, an account of `consumed` batches of `epoch`, unless this plan gives it.
  void check(const nlohmann::json& saved, std::size_t epoch, std::size_t consumed) const {
    if (planned_ && planned_->check) planned_->check(saved, epoch, consumed);
  }
  /// Positions of the whole of `epoch`: the dataset's samples, or the batches of its plan.
  [[nodiscard]] std::size_t epoch_positions(std::size_t epoch) const {
    return planned_ ? planned_->epoch_batches(epoch) : dataset_size_;
  }
  [[nodiscard]] std::size_t batch_size() const noexcept { return batch_size_; }
  [[nodiscard]] Remainder remainder() const noexcept { return remainder_; }
  /// The product of the counts of all share narrowings: how many loaders share the sequence.
  [[nodiscard]] std::size_t share_count() const noexcept {
    std::size_t shares = 1;
    for (const auto& narrowing : narrowings_) {
      if (const auto* share = std::get_if<SplitShare>(&narrowing)) shares *= share->count;
    }
    return shares;
  }

  /// The product of the counts of the shares in force in `layout` (after a restore onto other
  /// ranks, the ranks' interleaved share counts too).
  [[nodiscard]] std::size_t share_count(const EpochLayout& layout) const noexcept {
    if (!layout.trace.narrowings) return share_count();
    std::size_t shares = 1;
    for (const auto& narrowing : *layout.trace.narrowings) {
      if (const auto* share = std::get_if<SplitShare>(&narrowing)) shares *= share->count;
    }
    return shares;
  }

  /// Whether any narrowing is a slice (a slice has no place in the epoch-wide count of a state).
  [[nodiscard]] bool has_slices() const noexcept {
    for (const auto& narrowing : narrowings_) {
      if (std::holds_alternative<PositionSlice>(narrowing)) return true;
    }
    return false;
  }

  /// The layout of `epoch`.
  [[nodiscard]] EpochLayout layout(std::size_t epoch) const {
    EpochLayout out;
    out.epoch = epoch;
    std::size_t length = 0;
    std::size_t pad_from = 0;
    std::size_t copies = 1;  // loaders whose narrowings drop alike (the ranks)
    const std::vector<detail::Narrowing>* narrowings = &narrowings_;
    if (shard_ranks_) {
      const RankEpoch rank = rank_epoch(epoch);
      out.trace.ranks = rank.sequence;
      out.trace.rank_longest = rank.longest;
      out.offset = rank.sequence->offset();
      length = rank.length;
      pad_from = rank.pad_from;
      out.dropped += rank.dropped;
      if (rank.interleaved) {
        out.trace.narrowings = interleaved_narrowings();
        narrowings = out.trace.narrowings.get();
      } else {
        copies = shard_ranks_->count;
      }
    } else {
      out.trace.epoch_positions = epoch_positions(epoch);
      out.offset = epoch == resume_epoch_ ? std::min(resume_offset_, out.trace.epoch_positions) : 0;
      length = out.trace.epoch_positions - out.offset;
      pad_from = length;
    }
    const std::size_t b = batch_size_;
    for (const auto& narrowing : *narrowings) {
      out.trace.parent_lengths.push_back(length);
      if (const auto* slice = std::get_if<PositionSlice>(&narrowing)) {
        const std::size_t begin = std::min(slice->begin, length);
        const std::size_t end = std::min(slice->end, length);
        out.trace.slice_begins.push_back(begin);
        length = end - begin;
        pad_from = std::clamp(pad_from, begin, end) - begin;
      } else {
        const auto& share = std::get<SplitShare>(narrowing);
        out.trace.slice_begins.push_back(0);
        const std::size_t round = b * share.count;
        const std::size_t rounds =
            remainder_ == Remainder::drop ? length / round : (length + round - 1) / round;
        if (remainder_ == Remainder::drop) out.dropped += copies * (length - rounds * round);
        pad_from = first_padded_in_share(pad_from, share, rounds);
        length = rounds * b;
      }
    }
    out.num_batches = remainder_ == Remainder::drop ? length / b : (length + b - 1) / b;
    if (remainder_ == Remainder::drop) out.dropped += copies * (length - out.num_batches * b);
    out.trace.sequence_length = length;
    out.length = remainder_ == Remainder::partial ? length : out.num_batches * b;
    out.pad_from = std::min(pad_from, out.length);
    out.padding = out.length - out.pad_from;
    return out;
  }

  /// Where local position `q` (of `layout.length`) sits in the epoch's full sequence.
  ///
  /// Padding wraps around: a narrowing's positions past its parent's end go back to the
  /// parent's start, and those past the epoch's end to the epoch's start (position 0, not
  /// the resume offset), so a resumed epoch pads with the samples the uninterrupted one does.
  /// Under `ShardRanks`, the rank's own sequence takes the epoch's place: its padding wraps to
  /// the start of the rank's shards.
  [[nodiscard]] std::size_t locate(const EpochLayout& layout, std::size_t q) const noexcept {
    const std::size_t b = batch_size_;
    const auto& narrowings = layout.trace.narrowings ? *layout.trace.narrowings : narrowings_;
    // A slice innermost pads by wrapping around within the slice.
    if (!narrowings.empty() && q >= layout.trace.sequence_length &&
        layout.trace.sequence_length > 0)
      q %= layout.trace.sequence_length;
    for (std::size_t k = narrowings.size(); k-- > 0;) {
      const std::size_t parent_length = layout.trace.parent_lengths[k];
      if (std::holds_alternative<PositionSlice>(narrowings[k])) {
        q += layout.trace.slice_begins[k];
      } else {
        const auto& share = std::get<SplitShare>(narrowings[k]);
        q = ((q / b) * share.count + share.index) * b + q % b;
        // The outermost narrowing wraps over the whole epoch, below.
        if (k > 0 && q >= parent_length && parent_length > 0) q %= parent_length;
      }
    }
    if (layout.trace.ranks) return layout.trace.ranks->position(q);
    const std::size_t position = layout.offset + q;
    const std::size_t n = layout.trace.epoch_positions;
    return position >= n && n > 0 ? position % n : position;
  }

  /// `out[i] = locate(layout, first + i)` for every `i`; a plain loader's positions are
  /// consecutive, so it fills them without mapping each one through the narrowings.
  void locate(const EpochLayout& layout, std::size_t first,
              std::span<std::size_t> out) const noexcept {
    if (narrowings_.empty() && !layout.trace.ranks &&
        first + out.size() <= layout.trace.sequence_length) {
      std::iota(out.begin(), out.end(), layout.offset + first);
      return;
    }
    for (std::size_t i = 0; i < out.size(); ++i) out[i] = locate(layout, first + i);
  }

 private:
  /// One rank's share of an epoch under `ShardRanks`.
  struct RankEpoch {
    std::shared_ptr<const detail::RankSequence> sequence;
    std::size_t length = 0;    ///< positions the rank reads (padding included)
    std::size_t pad_from = 0;  ///< its first padded position
    std::size_t dropped = 0;   ///< positions no rank reads
    std::size_t longest = 0;   ///< the most positions any rank has left
    bool interleaved = false;  ///< the ranks' leftovers after a restore onto other ranks
  };

  /// The share of `epoch` of this plan's rank. Each rank reads its own shards from where the
  /// ranks stopped; the ranks read as many positions as the longest (`pad`, wrapping around
  /// within the rank's shards) or the shortest (`drop`). Resumed onto another number of ranks
  /// (or from an interleaved state), the rest of that epoch is every rank's leftovers, one
  /// after the other, split by interleaving instead.
  [[nodiscard]] RankEpoch rank_epoch(std::size_t epoch) const {
    const ShardRanks& ranks = *shard_ranks_;
    const bool resumed = epoch == resume_epoch_;
    const std::size_t saved_ranks = resumed ? resume_shard_ranks_ : ranks.count;
    const std::size_t rank_consumed = resumed ? resume_rank_consumed_ : 0;
    const std::size_t consumed = resumed ? resume_offset_ : 0;
    const std::vector<ShardRun> runs =
        shard_runs(ShardedEpochOrder(shard_table_, shard_seed_, epoch), *shard_table_);
    RankEpoch out;
    if ((rank_consumed == 0 && consumed == 0) || (saved_ranks == ranks.count && consumed == 0)) {
      const ShardAssignment assignment(runs, ranks.count);
      std::size_t shortest = std::numeric_limits<std::size_t>::max();
      std::size_t total = 0;
      for (std::size_t r = 0; r < ranks.count; ++r) {
        if (assignment.length(r) == 0) {
          throw UsageError("stoke: the shard rank split gives each rank whole shards: " +
                           std::to_string(ranks.count) + " ranks need as many non-empty shards, " +
                           "the dataset has fewer");
        }
        const std::size_t left =
            assignment.length(r) - std::min(assignment.length(r), rank_consumed);
        out.longest = std::max(out.longest, left);
        shortest = std::min(shortest, left);
        total += left;
      }
      out.sequence =
          std::make_shared<const detail::RankSequence>(assignment.runs(ranks.index), rank_consumed);
      const std::size_t mine = out.sequence->left();
      const bool drop = remainder_ == Remainder::drop;
      out.length = drop ? shortest : out.longest;
      out.pad_from = drop ? shortest : mine;
      out.dropped = drop ? total - shortest * ranks.count : 0;
      return out;
    }
    std::vector<ShardRun> leftovers;
    if (saved_ranks == 0) {
      leftovers = runs;  // an interleaved state: the whole epoch, shard after shard
    } else {
      const ShardAssignment saved(runs, saved_ranks);
      for (std::size_t r = 0; r < saved_ranks; ++r) {
        std::size_t skip = rank_consumed;
        for (ShardRun run : saved.runs(r)) {
          const std::size_t cut = std::min(skip, run.length);
          skip -= cut;
          if (cut == run.length) continue;
          leftovers.push_back({run.shard, run.begin + cut, run.length - cut});
        }
      }
    }
    out.sequence = std::make_shared<const detail::RankSequence>(std::move(leftovers), consumed);
    out.length = out.sequence->left();
    out.pad_from = out.length;
    out.longest = out.length;
    out.interleaved = true;
    return out;
  }

  /// The narrowings after a restore onto other ranks: the ranks' interleaved share, merged with
  /// a device split that follows it.
  [[nodiscard]] std::shared_ptr<const std::vector<detail::Narrowing>> interleaved_narrowings()
      const {
    auto out = std::make_shared<std::vector<detail::Narrowing>>();
    out->push_back(SplitShare{shard_ranks_->count, shard_ranks_->index});
    for (const auto& narrowing : narrowings_) {
      const auto* share = std::get_if<SplitShare>(&narrowing);
      auto* last = std::get_if<SplitShare>(&out->back());
      if (share && last && out->size() == 1) {
        last->index += last->count * share->index;
        last->count *= share->count;
      } else {
        out->push_back(narrowing);
      }
    }
    return out;
  }

  /// The first position of a share that maps into the parent's padding (or past its end).
  [[nodiscard]] std::size_t first_padded_in_share(std::size_t parent_pad_from,
                                                  const SplitShare& share,
                                                  std::size_t rounds) const noexcept {
    const std::size_t b = batch_size_;
    const std::size_t full = parent_pad_from / b;  // parent batches with no padding
    const std::size_t real_in_partial = parent_pad_from % b;
    const std::size_t first =
        full <= share.index ? 0 : (full - share.index + share.count - 1) / share.count;
    if (first >= rounds) return rounds * b;
    return first * b + (first * share.count + share.index == full ? real_in_partial : 0);
  }

  std::size_t dataset_size_;
  std::size_t batch_size_;
  Remainder remainder_;
  std::vector<detail::Narrowing> narrowings_;
  std::shared_ptr<const PlannedBatches> planned_;  ///< a planned epoch's batches (else null)
  std::optional<ShardRanks> shard_ranks_;
  std::shared_ptr<const ShardTable> shard_table_;  ///< under `ShardRanks`: the dataset's shards
  std::uint64_t shard_seed_ = 0;                   ///< under `ShardRanks`: the order's seed
  std::size_t resume_epoch_ = std::numeric_limits<std::size_t>::max();
  std::size_t resume_offset_ = 0;
  std::size_t resume_shard_ranks_ = 0;
  std::size_t resume_rank_consumed_ = 0;
};

}  // namespace stoke

#pragma once
/// @file
/// The shard-granular rank split: every rank takes whole shards of the epoch, balanced by
/// samples and re-drawn every epoch from the seed, so no two ranks read the same file.
/// `ShardAssignment` says which shards each rank reads; `detail::RankSequence` is one rank's
/// sequence of positions, which `EpochPlan` splits further over devices and workers.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <stoke/core/error.hpp>
#include <stoke/data/sharded_order.hpp>

namespace stoke {

/// Positions `[begin, begin + length)` of an epoch's order: one shard's visit.
struct ShardRun {
  std::size_t shard = 0;   ///< which shard
  std::size_t begin = 0;   ///< its first position in the epoch's order
  std::size_t length = 0;  ///< its samples
};

/// The shard runs of an epoch's shard-aware order, in the order it visits them.
inline std::vector<ShardRun> shard_runs(const ShardedEpochOrder& order, const ShardTable& table) {
  std::vector<ShardRun> runs;
  runs.reserve(table.count());
  std::size_t position = 0;
  for (std::size_t slot = 0; slot < table.count(); ++slot) {
    const std::size_t shard = order.shard_at(slot);
    runs.push_back({shard, position, table.size(shard)});
    position += table.size(shard);
  }
  return runs;
}

/// Which shards each of `ranks` ranks reads in one epoch: the shards are dealt in the order the
/// epoch visits them, each to the rank with the fewest samples so far (the lowest rank on a
/// tie). Ranks differ by at most one shard's samples; each keeps the epoch's visit order.
class ShardAssignment {
 public:
  /// Deals `runs` (an epoch's shard runs in visit order) to `ranks` ranks.
  ShardAssignment(const std::vector<ShardRun>& runs, std::size_t ranks)
      : runs_(ranks), lengths_(ranks, 0) {
    if (ranks == 0) throw UsageError("stoke: a shard assignment needs at least one rank");
    for (const ShardRun& run : runs) {
      if (run.length == 0) continue;
      const auto least = std::min_element(lengths_.begin(), lengths_.end());
      const auto rank = static_cast<std::size_t>(least - lengths_.begin());
      runs_[rank].push_back(run);
      *least += run.length;
    }
  }

  /// Ranks.
  [[nodiscard]] std::size_t ranks() const noexcept { return runs_.size(); }
  /// The shard runs of `rank`, in visit order.
  [[nodiscard]] const std::vector<ShardRun>& runs(std::size_t rank) const { return runs_[rank]; }
  /// The samples of `rank`.
  [[nodiscard]] std::size_t length(std::size_t rank) const { return lengths_[rank]; }

 private:
  std::vector<std::vector<ShardRun>> runs_;
  std::vector<std::size_t> lengths_;
};

namespace detail {

/// A sequence of positions of an epoch's order made of runs: one rank's shards (or, after a
/// restore onto another number of ranks, what every rank had left). `position(q)` maps a
/// position of the sequence to one of the epoch's order, starting at `offset` and wrapping
/// around to the sequence's start past its end (padding).
class RankSequence {
 public:
  /// The sequence of `runs`, read from `offset` on.
  RankSequence(std::vector<ShardRun> runs, std::size_t offset)
      : runs_(std::move(runs)), offset_(offset) {
    starts_.reserve(runs_.size());
    for (const ShardRun& run : runs_) {
      starts_.push_back(length_);
      length_ += run.length;
    }
  }

  /// Positions in the whole sequence (from its start, not from `offset`).
  [[nodiscard]] std::size_t length() const noexcept { return length_; }
  /// Where reading starts: positions of the sequence already consumed.
  [[nodiscard]] std::size_t offset() const noexcept { return offset_; }
  /// Positions left from `offset` on.
  [[nodiscard]] std::size_t left() const noexcept {
    return length_ > offset_ ? length_ - offset_ : 0;
  }

  /// The position of the epoch's order at position `q` after `offset` (wrapping around).
  [[nodiscard]] std::size_t position(std::size_t q) const noexcept {
    std::size_t s = offset_ + q;
    if (s >= length_ && length_ > 0) s %= length_;
    const std::size_t k = run_at(s);
    return runs_[k].begin + (s - starts_[k]);
  }

  /// The shards visited from `offset` on, in order.
  [[nodiscard]] std::vector<std::size_t> shards() const {
    std::vector<std::size_t> out;
    for (std::size_t k = 0; k < runs_.size(); ++k) {
      if (starts_[k] + runs_[k].length > offset_) out.push_back(runs_[k].shard);
    }
    return out;
  }

  /// The shards that the `count` positions from `offset` on visit, in order: fewer than
  /// `shards()` when the ranks stop short of this rank's end (`Remainder::drop`), and the first
  /// ones again when they wrap around past it (padding).
  [[nodiscard]] std::vector<std::size_t> shards(std::size_t count) const {
    std::vector<std::size_t> out;
    if (length_ == 0) return out;
    std::size_t s = offset_ % length_;
    for (std::size_t left = count; left > 0;) {
      const std::size_t k = run_at(s);
      if (out.empty() || out.back() != runs_[k].shard) out.push_back(runs_[k].shard);
      const std::size_t take = std::min(left, starts_[k] + runs_[k].length - s);
      left -= take;
      s = (s + take) % length_;
    }
    return out;
  }

 private:
  /// The run that holds position `s` of the sequence (`s < length()`).
  [[nodiscard]] std::size_t run_at(std::size_t s) const noexcept {
    const auto next = std::upper_bound(starts_.begin(), starts_.end(), s);
    return static_cast<std::size_t>(next - starts_.begin()) - 1;
  }

  std::vector<ShardRun> runs_;
  std::vector<std::size_t> starts_;
  std::size_t length_ = 0;
  std::size_t offset_ = 0;
};

}  // namespace detail

}  // namespace stoke

#pragma once
/// @file
/// `EpochPlan`: which positions of each epoch one loader reads. A loader's positions are the
/// epoch order, narrowed by slices and parts (interleaved splits), batched, with the
/// remainder dropped, padded or kept as a partial batch. One rule serves every level:
/// ranks, devices and workers all take batch-aligned parts of the same sequence.

#include <algorithm>
#include <cstddef>
#include <limits>
#include <numeric>
#include <span>
#include <string>
#include <variant>
#include <vector>

#include <stoke/core/error.hpp>
#include <stoke/data/remainder.hpp>

namespace stoke {

/// Positions `[begin, end)` of the parent sequence.
struct PositionSlice {
  std::size_t begin = 0;
  std::size_t end = 0;
};

/// Every `count`-th batch of the parent sequence, starting with batch `index`.
struct SplitPart {
  std::size_t count = 1;
  std::size_t index = 0;
};

namespace detail {
/// How `EpochPlan::locate` maps a loader's positions back through its narrowings.
struct NarrowingTrace {
  std::size_t sequence_length = 0;          ///< positions after all narrowings, before batching
  std::vector<std::size_t> parent_lengths;  ///< length of the parent of each narrowing
  std::vector<std::size_t> slice_begins;    ///< clamped begin of each slice (0 for parts)
};
}  // namespace detail

/// The shape of one epoch of one loader: what `loader.layout(epoch)` reports.
struct EpochLayout {
  std::size_t epoch = 0;         ///< which epoch
  std::size_t offset = 0;        ///< positions of the epoch skipped because they were consumed
  std::size_t length = 0;        ///< positions this loader reads, padding included
  std::size_t num_batches = 0;   ///< batches this loader yields
  std::size_t padding = 0;       ///< items this loader yields that repeat other positions
  std::size_t dropped = 0;       ///< positions no part of the split reads this epoch
  std::size_t pad_from = 0;      ///< first padded position (padding is always a suffix)
  detail::NarrowingTrace trace;  ///< internal: how the plan locates this loader's positions
};

/// Which positions of every epoch a loader reads; a small value copied into each slice.
class EpochPlan {
 public:
  /// A plan over `dataset_size` positions in batches of `batch_size`.
  EpochPlan(std::size_t dataset_size, std::size_t batch_size, Remainder remainder)
      : dataset_size_(dataset_size), batch_size_(batch_size), remainder_(remainder) {
    if (batch_size == 0) throw UsageError("stoke: batch size must be at least 1");
  }

  /// Narrows to positions `[begin, end)` of the current sequence (clamped to its length).
  void add_slice(std::size_t begin, std::size_t end) {
    if (end < begin) {
      throw UsageError("stoke: slice(" + std::to_string(begin) + ", " + std::to_string(end) +
                       ") has end before begin");
    }
    narrowings_.emplace_back(PositionSlice{begin, end});
  }

  /// Narrows to every `count`-th batch starting at `index`; two parts in a row merge into one,
  /// so a rank-then-device split pads or drops once, not at each level.
  void add_part(std::size_t count, std::size_t index) {
    if (count == 0 || index >= count) {
      throw UsageError("stoke: part " + std::to_string(index) + " of " + std::to_string(count) +
                       " does not exist");
    }
    if (remainder_ == Remainder::partial) {
      throw UsageError(
          "stoke: splitting needs Remainder::drop or Remainder::pad, so that every part runs "
          "the same number of batches (the loader was built with Remainder::partial)");
    }
    if (!narrowings_.empty()) {
      if (auto* last = std::get_if<SplitPart>(&narrowings_.back())) {
        // Part `index` of `count` of part `last->index` of `last->count`: batch t of the result
        // is parent batch (t * count + index) * last->count + last->index.
        last->index += last->count * index;
        last->count *= count;
        return;
      }
    }
    narrowings_.emplace_back(SplitPart{count, index});
  }

  /// In `epoch`, start the epoch's sequence at `offset` (the positions before it were consumed).
  void resume_at(std::size_t epoch, std::size_t offset) noexcept {
    resume_epoch_ = epoch;
    resume_offset_ = offset;
  }

  [[nodiscard]] std::size_t dataset_size() const noexcept { return dataset_size_; }
  [[nodiscard]] std::size_t batch_size() const noexcept { return batch_size_; }
  [[nodiscard]] Remainder remainder() const noexcept { return remainder_; }
  /// The product of the counts of all part narrowings: how many loaders share the sequence.
  [[nodiscard]] std::size_t part_count() const noexcept {
    std::size_t parts = 1;
    for (const auto& narrowing : narrowings_) {
      if (const auto* part = std::get_if<SplitPart>(&narrowing)) parts *= part->count;
    }
    return parts;
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
    out.offset = epoch == resume_epoch_ ? std::min(resume_offset_, dataset_size_) : 0;
    std::size_t length = dataset_size_ - out.offset;
    std::size_t pad_from = length;
    const std::size_t b = batch_size_;
    for (const auto& narrowing : narrowings_) {
      out.trace.parent_lengths.push_back(length);
      if (const auto* slice = std::get_if<PositionSlice>(&narrowing)) {
        const std::size_t begin = std::min(slice->begin, length);
        const std::size_t end = std::min(slice->end, length);
        out.trace.slice_begins.push_back(begin);
        length = end - begin;
        pad_from = std::clamp(pad_from, begin, end) - begin;
      } else {
        const auto& part = std::get<SplitPart>(narrowing);
        out.trace.slice_begins.push_back(0);
        const std::size_t round = b * part.count;
        const std::size_t rounds =
            remainder_ == Remainder::drop ? length / round : (length + round - 1) / round;
        if (remainder_ == Remainder::drop) out.dropped += length - rounds * round;
        pad_from = first_padded_in_part(pad_from, part, rounds);
        length = rounds * b;
      }
    }
    out.num_batches = remainder_ == Remainder::drop ? length / b : (length + b - 1) / b;
    if (remainder_ == Remainder::drop) out.dropped += length - out.num_batches * b;
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
  [[nodiscard]] std::size_t locate(const EpochLayout& layout, std::size_t q) const noexcept {
    const std::size_t b = batch_size_;
    // A slice innermost pads by wrapping around within the slice.
    if (!narrowings_.empty() && q >= layout.trace.sequence_length &&
        layout.trace.sequence_length > 0)
      q %= layout.trace.sequence_length;
    for (std::size_t k = narrowings_.size(); k-- > 0;) {
      const std::size_t parent_length = layout.trace.parent_lengths[k];
      if (std::holds_alternative<PositionSlice>(narrowings_[k])) {
        q += layout.trace.slice_begins[k];
      } else {
        const auto& part = std::get<SplitPart>(narrowings_[k]);
        q = ((q / b) * part.count + part.index) * b + q % b;
        // The outermost narrowing wraps over the whole epoch, below.
        if (k > 0 && q >= parent_length && parent_length > 0) q %= parent_length;
      }
    }
    const std::size_t position = layout.offset + q;
    return position >= dataset_size_ && dataset_size_ > 0 ? position % dataset_size_ : position;
  }

  /// `out[i] = locate(layout, first + i)` for every `i`; a plain loader's positions are
  /// consecutive, so it fills them without mapping each one through the narrowings.
  void locate(const EpochLayout& layout, std::size_t first,
              std::span<std::size_t> out) const noexcept {
    if (narrowings_.empty() && first + out.size() <= layout.trace.sequence_length) {
      std::iota(out.begin(), out.end(), layout.offset + first);
      return;
    }
    for (std::size_t i = 0; i < out.size(); ++i) out[i] = locate(layout, first + i);
  }

 private:
  /// The first position of a part that maps into the parent's padding (or past its end).
  [[nodiscard]] std::size_t first_padded_in_part(std::size_t parent_pad_from, const SplitPart& part,
                                                 std::size_t rounds) const noexcept {
    const std::size_t b = batch_size_;
    const std::size_t full = parent_pad_from / b;  // parent batches with no padding
    const std::size_t real_in_partial = parent_pad_from % b;
    const std::size_t first =
        full <= part.index ? 0 : (full - part.index + part.count - 1) / part.count;
    if (first >= rounds) return rounds * b;
    return first * b + (first * part.count + part.index == full ? real_in_partial : 0);
  }

  std::size_t dataset_size_;
  std::size_t batch_size_;
  Remainder remainder_;
  std::vector<std::variant<PositionSlice, SplitPart>> narrowings_;
  std::size_t resume_epoch_ = std::numeric_limits<std::size_t>::max();
  std::size_t resume_offset_ = 0;
};

}  // namespace stoke

#pragma once
/// @file
/// The vocabulary of a variable-length batch plan: documents and their lengths, the pieces of
/// documents a planned batch holds, and the plan window, the unit a plan is computed in.
///
/// A *plan window* is a span of the epoch that a planner plans on its own: for the whole-document
/// planners (pad, first-fit, best-fit, buckets) it is `window_documents` consecutive positions of
/// the epoch's document order; for concatenate-then-split it is `window_batches` consecutive
/// batches of the concatenated epoch. Its batches are a pure function of (seed, epoch, where the
/// window starts), and where it starts is a few numbers (`WindowStart`), so a plan never builds an
/// index over the corpus and resuming recomputes one window.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include <stoke/core/error.hpp>
#include <stoke/core/rng.hpp>
#include <stoke/data/order.hpp>

namespace stoke {

/// The token counts of a corpus's documents: a span of lengths, or a count and a callable
/// `length(i)` (for lengths read on demand, such as a token store's document index).
class DocumentLengths {
 public:
  /// The lengths in `lengths` (not copied: the span must outlive every copy). A negative length
  /// is an `InputError` naming the document when it is read (they are not all read up front).
  DocumentLengths(std::span<const std::int32_t> lengths)  // NOLINT(google-explicit-constructor)
      : count_(lengths.size()), length_([lengths](std::size_t i) {
          if (lengths[i] < 0) {
            throw InputError("stoke: document " + std::to_string(i) + " has a negative length (" +
                             std::to_string(lengths[i]) + ")");
          }
          return static_cast<std::size_t>(lengths[i]);
        }) {}
  /// The lengths in `lengths`, kept by this value (and shared by its copies).
  DocumentLengths(std::vector<std::int32_t> lengths)  // NOLINT(google-explicit-constructor)
      : DocumentLengths(std::make_shared<const std::vector<std::int32_t>>(std::move(lengths))) {}
  /// `count` documents, document `i` of `length(i)` tokens.
  DocumentLengths(std::size_t count, std::function<std::size_t(std::size_t)> length)
      : count_(count), length_(std::move(length)) {}
  /// `count` documents, document `i` of `length(i)` tokens, whose fingerprint is `fingerprint`
  /// (lengths known by what makes them, such as a mixture's epoch: reading them would cost a walk).
  DocumentLengths(std::size_t count, std::function<std::size_t(std::size_t)> length,
                  std::uint64_t fingerprint)
      : count_(count), length_(std::move(length)), fingerprint_(fingerprint) {}

  /// Number of documents.
  [[nodiscard]] std::size_t size() const noexcept { return count_; }
  /// Tokens in document `document`.
  [[nodiscard]] std::size_t operator()(std::size_t document) const { return length_(document); }

  /// A fingerprint of the lengths: their count and up to 4096 of them, evenly spaced (reading
  /// every length would cost a pass over the corpus).
  [[nodiscard]] std::uint64_t fingerprint() const {
    if (fingerprint_) return *fingerprint_;
    std::uint64_t hash = mix64(count_ + 0x6A09E667F3BCC908ull);
    const std::size_t stride = count_ / 4096 + 1;
    for (std::size_t i = 0; i < count_; i += stride) hash = mix64(hash ^ (*this)(i));
    return hash;
  }

 private:
  explicit DocumentLengths(std::shared_ptr<const std::vector<std::int32_t>> owned)
      : DocumentLengths(std::span<const std::int32_t>(*owned)) {
    owned_ = std::move(owned);
  }

  std::shared_ptr<const std::vector<std::int32_t>> owned_;  ///< the lengths, when kept here
  std::size_t count_ = 0;
  std::function<std::size_t(std::size_t)> length_;
  std::optional<std::uint64_t> fingerprint_;  ///< given, not read from the lengths
};

/// Tokens `[begin, end)` of one document, as one planned row holds them.
struct DocumentPiece {
  std::size_t document = 0;  ///< dataset index of the document
  std::size_t begin = 0;     ///< first token of the document in this piece
  std::size_t end = 0;       ///< one past the last token

  /// Tokens in the piece.
  [[nodiscard]] std::size_t size() const noexcept { return end - begin; }
  friend bool operator==(const DocumentPiece&, const DocumentPiece&) = default;
};

/// One row of a planned batch: the pieces it holds, in order (padding follows them).
struct PlannedRow {
  std::vector<DocumentPiece> pieces{};  ///< what the row holds, in order

  /// Real tokens in the row.
  [[nodiscard]] std::size_t tokens() const noexcept {
    std::size_t total = 0;
    for (const auto& piece : pieces) total += piece.size();
    return total;
  }
  friend bool operator==(const PlannedRow&, const PlannedRow&) = default;
};

/// One planned batch: rows of `width` token slots each (real tokens, then padding).
struct PlannedBatch {
  std::vector<PlannedRow> rows{};  ///< the rows, in order
  std::size_t width = 0;           ///< token slots of every row, padding included

  /// Real tokens in the batch.
  [[nodiscard]] std::size_t tokens() const noexcept {
    std::size_t total = 0;
    for (const auto& row : rows) total += row.tokens();
    return total;
  }
  /// Token slots of the batch, padding included.
  [[nodiscard]] std::size_t slots() const noexcept { return rows.size() * width; }
  friend bool operator==(const PlannedBatch&, const PlannedBatch&) = default;
};

/// Where a plan window starts: a few numbers that make a window's plan computable on its own.
struct WindowStart {
  std::size_t window = 0;    ///< which window of the epoch
  std::size_t position = 0;  ///< first position of the epoch's document order it reads
  std::size_t token = 0;     ///< first token of that document it reads (concatenation only)
  friend bool operator==(const WindowStart&, const WindowStart&) = default;
};

/// The plan of one window: its batches and where the next window starts.
struct WindowPlan {
  std::vector<PlannedBatch> batches{};  ///< the window's batches, in order
  WindowStart next{};                   ///< where the next window starts
  bool last = false;                    ///< whether this is the epoch's last window
};

/// Where the window after one starts and how many batches it has, found without planning them.
struct WindowSkip {
  std::size_t batches = 0;  ///< the window's number of batches
  WindowStart next{};       ///< where the next window starts
  bool last = false;        ///< whether this is the epoch's last window
  friend bool operator==(const WindowSkip&, const WindowSkip&) = default;
};

/// A planner of variable-length batches: a pure function from (epoch, window start) to the
/// window's batches (its seed and parameters are its own).
///
/// Requirements:
/// 1. `p.plan_window(epoch, start)` returns the `WindowPlan` of the window at `start`, the same
///    on every call, thread, device and rank;
/// 2. the first window of every epoch starts at `WindowStart{}`;
/// 3. `p.fingerprint()` identifies the plan's parameters (kind, sizes, seed, lengths), checked
///    when a state is restored;
/// 4. `P` is copy-constructible.
template <class P>
concept WindowPlanner =
    std::copy_constructible<P> && requires(const P& planner, std::size_t epoch, WindowStart start) {
      { planner.plan_window(epoch, start) } -> std::same_as<WindowPlan>;
      { planner.fingerprint() } -> std::same_as<std::uint64_t>;
    };

/// A `WindowPlanner` whose epochs can be walked without planning them: a planner of the
/// concatenated stream, whose windows are fixed spans of tokens.
///
/// Requirements:
/// 1. `p.skip_window(epoch, start)` equals what `p.plan_window(epoch, start)` says of its window
///    (its number of batches, `next` and `last`), in time linear in the documents it passes and
///    without making its batches;
/// 2. `p.epoch_batches(epoch)` is the number of batches of `epoch`'s plan, in constant time.
template <class P>
concept SkippingPlanner =
    WindowPlanner<P> && requires(const P& planner, std::size_t epoch, WindowStart start) {
      { planner.skip_window(epoch, start) } -> std::same_as<WindowSkip>;
      { planner.epoch_batches(epoch) } -> std::convertible_to<std::size_t>;
    };

/// A plan's fingerprint: `tag` (its kind), the fingerprint of `lengths` and `values` (its
/// parameters), mixed.
[[nodiscard]] inline std::uint64_t plan_fingerprint(std::uint64_t tag,
                                                    const DocumentLengths& lengths,
                                                    std::initializer_list<std::uint64_t> values) {
  std::uint64_t hash = mix64(tag ^ lengths.fingerprint());
  for (const std::uint64_t value : values) hash = mix64(hash ^ value);
  return hash;
}

namespace detail {
/// Erases the entries of `by_epoch` (a map keyed by epoch) farthest from `epoch` until at most
/// `count` are left: the caches of plans and walks keep the epochs nearest the one in use.
template <class Map>
void keep_nearest_epochs(Map& by_epoch, std::size_t epoch, std::size_t count) {
  const auto distance = [epoch](std::size_t other) {
    return other < epoch ? epoch - other : other - epoch;
  };
  while (by_epoch.size() > count) {
    by_epoch.erase(std::max_element(
        by_epoch.begin(), by_epoch.end(),
        [&](const auto& a, const auto& b) { return distance(a.first) < distance(b.first); }));
  }
}
}  // namespace detail

/// The epoch's document order of `count` documents: shuffled under (seed, epoch), or not.
[[nodiscard]] inline EpochOrder document_order(std::size_t count, bool shuffle, std::uint64_t seed,
                                               std::size_t epoch) noexcept {
  return shuffle ? EpochOrder(count, seed, epoch) : EpochOrder(count);
}

}  // namespace stoke

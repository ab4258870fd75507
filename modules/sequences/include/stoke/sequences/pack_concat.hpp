#pragma once
/// @file
/// `ConcatPlanner`: concatenate-then-split, as Megatron's `GPTDataset` and Grain's
/// `ConcatThenSplit` do: the epoch's documents, in the epoch's order, read as one stream of
/// tokens cut into rows of S tokens. Closed form from the order and a running prefix sum of
/// lengths: a plan window starts at (document position, token), so no index is built.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include <stoke/core/error.hpp>
#include <stoke/core/rng.hpp>
#include <stoke/sequences/sequence_plan.hpp>

namespace stoke {

/// The parameters of a `ConcatPlanner`.
struct ConcatOptions {
  std::size_t sequence_length = 0;  ///< S: row r holds tokens [r S, r S + S) of the stream
  /// Whether each row also holds the token after its S (the last input's target): rows of S + 1
  /// slots that overlap by one token, as for shifted next-token targets.
  bool shifted = false;
  std::size_t rows_per_batch = 1;   ///< rows of every batch (the epoch's last may have empty rows)
  std::size_t window_batches = 64;  ///< batches per plan window
  bool shuffle = true;              ///< shuffle the document order under (seed, epoch)
  std::uint64_t seed = 0;           ///< key of the document order
};

/// Cuts the epoch's concatenated documents into rows of `sequence_length` tokens (plus one with
/// `shifted`); every token is the input of exactly one row. The last row is padded; nothing is
/// dropped. A pure function of (seed, epoch, lengths, options).
class ConcatPlanner {
 public:
  /// A planner over `lengths` with `options`.
  ConcatPlanner(DocumentLengths lengths, ConcatOptions options)
      : lengths_(std::move(lengths)), options_(options) {
    if (options_.sequence_length == 0) throw UsageError("stoke: pack needs a sequence length");
    if (options_.rows_per_batch == 0) throw UsageError("stoke: pack needs a row per batch");
    if (options_.window_batches == 0) throw UsageError("stoke: pack needs a window");
    fingerprint_ = compute_fingerprint();
  }

  /// The number of batches of every epoch's plan, in closed form: rows of S tokens start at
  /// every S-th token of the stream, `rows_per_batch` rows a batch. The stream's length is summed
  /// from the lengths once (on the first call; copies share it).
  [[nodiscard]] std::size_t epoch_batches(std::size_t /*epoch*/) const {
    std::call_once(total_->once, [this] {
      for (std::size_t d = 0; d < lengths_.size(); ++d) total_->tokens += lengths_(d);
    });
    const std::size_t rows = ceil_div(total_->tokens, options_.sequence_length);
    return ceil_div(rows, options_.rows_per_batch);
  }

  /// What `plan_window(epoch, start)` says of its window (batches, next start, last), found by
  /// walking the lengths of the documents it spans, without making its batches.
  [[nodiscard]] WindowSkip skip_window(std::size_t epoch, const WindowStart& start) const {
    const auto order = document_order(lengths_.size(), options_.shuffle, options_.seed, epoch);
    const std::size_t span =
        options_.window_batches * options_.rows_per_batch * options_.sequence_length;
    Cursor at{start.position, start.token};
    skip_finished(order, at);
    const std::size_t moved = advance(order, at, span);
    const std::size_t rows = ceil_div(moved, options_.sequence_length);
    return WindowSkip{
        .batches = ceil_div(rows, options_.rows_per_batch),
        .next = {.window = start.window + 1, .position = at.position, .token = at.token},
        .last = ended(at)};
  }

  /// The plan of the window at `start` of `epoch`: `window_batches` batches of the stream from
  /// token `start.token` of the document at position `start.position`.
  [[nodiscard]] WindowPlan plan_window(std::size_t epoch, const WindowStart& start) const {
    const auto order = document_order(lengths_.size(), options_.shuffle, options_.seed, epoch);
    const std::size_t s = options_.sequence_length;
    const std::size_t width = s + (options_.shifted ? 1 : 0);
    Cursor at{start.position, start.token};
    skip_finished(order, at);
    WindowPlan out;
    for (std::size_t b = 0; b < options_.window_batches && !ended(at); ++b) {
      PlannedBatch batch{.rows = {}, .width = width};
      batch.rows.resize(options_.rows_per_batch);
      for (auto& row : batch.rows) {
        if (ended(at)) break;
        row.pieces = read(order, at, width);
        advance(order, at, s);
      }
      out.batches.push_back(std::move(batch));
    }
    out.next = WindowStart{.window = start.window + 1, .position = at.position, .token = at.token};
    out.last = ended(at);
    return out;
  }

  /// Identifies the plan's parameters and lengths (computed once, when the planner is made).
  [[nodiscard]] std::uint64_t fingerprint() const noexcept { return fingerprint_; }

  /// The options the planner was made with.
  [[nodiscard]] const ConcatOptions& options() const noexcept { return options_; }

 private:
  /// The fingerprint of the options and of a sample of the lengths.
  [[nodiscard]] std::uint64_t compute_fingerprint() const {
    return plan_fingerprint(
        0x434F4E43ull,  // "CONC"
        lengths_,
        {std::uint64_t{options_.sequence_length}, std::uint64_t{options_.shifted},
         std::uint64_t{options_.rows_per_batch}, std::uint64_t{options_.window_batches},
         std::uint64_t{options_.shuffle}, options_.seed});
  }

  /// A place in the stream: token `token` of the document at `position` of the order.
  struct Cursor {
    std::size_t position = 0;
    std::size_t token = 0;
  };

  [[nodiscard]] bool ended(const Cursor& at) const noexcept {
    return at.position >= lengths_.size();
  }

  /// Moves `at` past documents it has read to the end (and past empty ones).
  void skip_finished(const EpochOrder& order, Cursor& at) const {
    while (!ended(at) && at.token >= lengths_(order(at.position))) {
      ++at.position;
      at.token = 0;
    }
  }

  /// Moves `at` on by `count` tokens of the stream (fewer at the epoch's end), appending the
  /// pieces it passes to `pieces` when given; returns the tokens it moved.
  std::size_t advance(const EpochOrder& order, Cursor& at, std::size_t count,
                      std::vector<DocumentPiece>* pieces = nullptr) const {
    const std::size_t asked = count;
    while (count > 0 && !ended(at)) {
      const std::size_t document = order(at.position);
      const std::size_t taken = std::min(count, lengths_(document) - at.token);
      if (pieces != nullptr) pieces->push_back({document, at.token, at.token + taken});
      at.token += taken;
      count -= taken;
      skip_finished(order, at);
    }
    return asked - count;
  }

  [[nodiscard]] static constexpr std::size_t ceil_div(std::size_t a, std::size_t b) noexcept {
    return (a + b - 1) / b;
  }

  /// The pieces of the next `count` tokens of the stream from `at` (fewer at the epoch's end).
  [[nodiscard]] std::vector<DocumentPiece> read(const EpochOrder& order, Cursor at,
                                                std::size_t count) const {
    std::vector<DocumentPiece> pieces;
    advance(order, at, count, &pieces);
    return pieces;
  }

  DocumentLengths lengths_;
  ConcatOptions options_;
  std::uint64_t fingerprint_ = 0;
  /// The stream's length (every document's tokens), summed once.
  struct TotalTokens {
    std::once_flag once;
    std::size_t tokens = 0;
  };
  std::shared_ptr<TotalTokens> total_ = std::make_shared<TotalTokens>();
};

}  // namespace stoke

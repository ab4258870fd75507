#pragma once
/// @file
/// `FitPlanner`: packs whole documents into rows of S tokens by first-fit or best-fit, per plan
/// window of the epoch (fine-tuning data, where a document should not be cut).

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <stoke/core/error.hpp>
#include <stoke/core/rng.hpp>
#include <stoke/sequences/first_fit_rows.hpp>
#include <stoke/sequences/sequence_plan.hpp>
#include <stoke/sequences/window_documents.hpp>

namespace stoke {

/// Which open row a document goes to.
enum class PackFit {
  first,  ///< the first row (in order of opening) with room
  best,   ///< the row with the least room that fits (on a tie, the one that got that room first)
};

/// What a packer does with a document longer than a row.
enum class Oversize {
  split,   ///< cut it into full rows of S tokens; its remainder is packed as a document
  refuse,  ///< throw an `InputError` naming the document, its length and the window
};

/// The parameters of a `FitPlanner`.
struct FitOptions {
  std::size_t sequence_length = 0;  ///< S: token slots of every row
  std::size_t rows_per_batch = 1;   ///< rows of every batch (a window's last may have empty rows)
  std::size_t window_documents = 4096;  ///< positions of the epoch order per plan window
  bool shuffle = true;                  ///< shuffle the document order under (seed, epoch)
  std::uint64_t seed = 0;               ///< key of the document order
  PackFit fit = PackFit::first;         ///< first-fit or best-fit
  Oversize oversize = Oversize::split;  ///< what to do with a document longer than S
};

/// Packs each plan window's documents into rows of `sequence_length` slots by `fit`; rows are
/// batched `rows_per_batch` at a time in the order they were opened. Documents of zero tokens
/// take no room and appear in no row. A pure function of (seed, epoch, lengths, options).
class FitPlanner {
 public:
  /// A planner over `lengths` with `options`.
  FitPlanner(DocumentLengths lengths, FitOptions options)
      : lengths_(std::move(lengths)), options_(options) {
    if (options_.sequence_length == 0) throw UsageError("stoke: pack needs a sequence length");
    if (options_.rows_per_batch == 0) throw UsageError("stoke: pack needs a row per batch");
    if (options_.window_documents == 0) throw UsageError("stoke: pack needs a window");
    fingerprint_ = compute_fingerprint();
  }

  /// The plan of the window at `start` of `epoch`.
  [[nodiscard]] WindowPlan plan_window(std::size_t epoch, const WindowStart& start) const {
    const auto order = document_order(lengths_.size(), options_.shuffle, options_.seed, epoch);
    WindowDocuments read = read_window_documents(lengths_, order, options_.window_documents, start);
    std::vector<PlannedRow> rows = pack(read.documents, start.window);
    WindowPlan out;
    out.next = read.next;
    out.last = read.last;
    const std::size_t b = options_.rows_per_batch;
    for (std::size_t first = 0; first < rows.size(); first += b) {
      PlannedBatch batch{.rows = {}, .width = options_.sequence_length};
      batch.rows.resize(b);
      for (std::size_t r = 0; r < b && first + r < rows.size(); ++r) {
        batch.rows[r] = std::move(rows[first + r]);
      }
      out.batches.push_back(std::move(batch));
    }
    return out;
  }

  /// Identifies the plan's parameters and lengths (computed once, when the planner is made).
  [[nodiscard]] std::uint64_t fingerprint() const noexcept { return fingerprint_; }

  /// The options the planner was made with.
  [[nodiscard]] const FitOptions& options() const noexcept { return options_; }

 private:
  /// The fingerprint of the options and of a sample of the lengths.
  [[nodiscard]] std::uint64_t compute_fingerprint() const {
    return plan_fingerprint(
        0x46495450ull,  // "FITP"
        lengths_,
        {std::uint64_t{options_.sequence_length}, std::uint64_t{options_.rows_per_batch},
         std::uint64_t{options_.window_documents}, std::uint64_t{options_.shuffle}, options_.seed,
         static_cast<std::uint64_t>(options_.fit), static_cast<std::uint64_t>(options_.oversize)});
  }

  /// The rows of one window's documents, in order of opening.
  [[nodiscard]] std::vector<PlannedRow> pack(const std::vector<WindowDocument>& documents,
                                             std::size_t window) const {
    const std::size_t s = options_.sequence_length;
    std::vector<PlannedRow> rows;
    detail::FirstFitRows rooms;                       // free slots of each row
    std::multimap<std::size_t, std::size_t> by_room;  // best-fit: room -> row
    const auto place = [&](std::size_t document, std::size_t begin, std::size_t end) {
      const std::size_t need = end - begin;
      std::size_t row = rows.size();
      if (options_.fit == PackFit::first) {
        row = rooms.first_with(need);
      } else if (const auto it = by_room.lower_bound(need); it != by_room.end()) {
        row = it->second;
        by_room.erase(it);
      }
      if (row == rows.size()) {
        rows.emplace_back();
        rooms.open(s);
      }
      rows[row].pieces.push_back({document, begin, end});
      const std::size_t left = rooms.room(row) - need;
      rooms.set(row, left);
      if (options_.fit == PackFit::best && left > 0) by_room.emplace(left, row);
    };
    for (const auto& [document, length] : documents) {
      std::size_t begin = 0;
      if (length > s) {
        if (options_.oversize == Oversize::refuse) {
          throw InputError("stoke: document " + std::to_string(document) + " has " +
                           std::to_string(length) + " tokens, more than the sequence length " +
                           std::to_string(s) + " (plan window " + std::to_string(window) +
                           "; Oversize::split would cut it)");
        }
        for (; length - begin >= s; begin += s) {
          rows.push_back(PlannedRow{{{document, begin, begin + s}}});
          rooms.open(0);
        }
      }
      if (begin < length) place(document, begin, length);
    }
    return rows;
  }

  DocumentLengths lengths_;
  FitOptions options_;
  std::uint64_t fingerprint_ = 0;
};

}  // namespace stoke

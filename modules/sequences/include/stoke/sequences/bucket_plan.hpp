#pragma once
/// @file
/// `BucketPlanner`: batches of whole documents of similar length under a token budget (at most
/// T token slots per batch, padding counted; or an attention cost), per plan window of the
/// epoch, with bucket boundaries estimated from the data's lengths.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <numeric>
#include <string>
#include <utility>
#include <vector>

#include <stoke/core/error.hpp>
#include <stoke/core/rng.hpp>
#include <stoke/sequences/sequence_plan.hpp>
#include <stoke/sequences/window_documents.hpp>

namespace stoke {

/// What a bucketed batch's budget counts.
enum class BucketCost {
  tokens,     ///< rows x width: token slots, padding included
  attention,  ///< rows x width x width: the quadratic cost of full attention
};

/// The parameters of a `BucketPlanner`.
struct BucketOptions {
  std::size_t budget = 0;                ///< T: the most a batch may cost
  BucketCost cost = BucketCost::tokens;  ///< what the budget counts
  std::size_t pad_multiple = 1;          ///< a batch's width is its longest rounded up to this
  /// Upper bounds (inclusive, ascending) of every bucket but the last, which is unbounded; see
  /// `estimate_bucket_boundaries`.
  std::vector<std::size_t> boundaries{};
  std::size_t window_documents = 4096;  ///< positions of the epoch order per plan window
  bool shuffle = true;                  ///< shuffle documents and each window's batches
  std::uint64_t seed = 0;               ///< key of the orders
};

/// Bucket boundaries that split `lengths` into `buckets` groups of about equal counts: quantiles
/// of up to `sample` lengths, evenly spaced over the documents (no pass over the whole corpus);
/// repeated values are merged, so fewer boundaries may come back.
[[nodiscard]] inline std::vector<std::size_t> estimate_bucket_boundaries(
    const DocumentLengths& lengths, std::size_t buckets, std::size_t sample = 65536) {
  if (buckets == 0) throw UsageError("stoke: estimate_bucket_boundaries needs a bucket");
  std::vector<std::size_t> seen;
  const std::size_t stride = lengths.size() / std::max<std::size_t>(sample, 1) + 1;
  for (std::size_t i = 0; i < lengths.size(); i += stride) seen.push_back(lengths(i));
  std::sort(seen.begin(), seen.end());
  std::vector<std::size_t> boundaries;
  for (std::size_t k = 1; k < buckets && !seen.empty(); ++k) {
    const std::size_t value = seen[k * (seen.size() - 1) / buckets];
    if (boundaries.empty() || boundaries.back() < value) boundaries.push_back(value);
  }
  return boundaries;
}

/// Groups each plan window's documents by bucket, sorts each bucket by length (then index), fills
/// batches greedily up to the budget, then shuffles the window's batches under (seed, epoch,
/// window). Every document of the epoch is in exactly one batch, one document a row. A document
/// whose own row exceeds the budget is refused with an `InputError` naming it and the window.
class BucketPlanner {
 public:
  /// A planner over `lengths` with `options`.
  BucketPlanner(DocumentLengths lengths, BucketOptions options)
      : lengths_(std::move(lengths)), options_(std::move(options)) {
    if (options_.budget == 0) throw UsageError("stoke: bucketing needs a budget");
    if (options_.window_documents == 0) throw UsageError("stoke: bucketing needs a window");
    if (!std::is_sorted(options_.boundaries.begin(), options_.boundaries.end())) {
      throw UsageError("stoke: bucket boundaries must ascend");
    }
    fingerprint_ = compute_fingerprint();
  }

  /// The plan of the window at `start` of `epoch`.
  [[nodiscard]] WindowPlan plan_window(std::size_t epoch, const WindowStart& start) const {
    const auto order = document_order(lengths_.size(), options_.shuffle, options_.seed, epoch);
    WindowDocuments read = read_window_documents(lengths_, order, options_.window_documents, start);
    auto& documents = read.documents;
    std::sort(documents.begin(), documents.end(), [&](const auto& a, const auto& b) {
      const std::size_t bucket_a = bucket(a.length);
      const std::size_t bucket_b = bucket(b.length);
      if (bucket_a != bucket_b) return bucket_a < bucket_b;
      return a.length != b.length ? a.length < b.length : a.document < b.document;
    });
    std::vector<PlannedBatch> batches;
    PlannedBatch open;
    std::size_t open_bucket = 0;
    for (const auto& [document, length] : documents) {
      const std::size_t width = round_up_to_multiple(length, options_.pad_multiple);
      if (cost(1, width) > options_.budget) {
        throw InputError("stoke: document " + std::to_string(document) + " of " +
                         std::to_string(length) + " tokens alone exceeds the bucket budget " +
                         std::to_string(options_.budget) + " (plan window " +
                         std::to_string(start.window) + ")");
      }
      const std::size_t in = bucket(length);
      if (!open.rows.empty() &&
          (in != open_bucket ||
           cost(open.rows.size() + 1, std::max(open.width, width)) > options_.budget)) {
        batches.push_back(std::move(open));
        open = {};
      }
      open_bucket = in;
      open.width = std::max(open.width, width);
      open.rows.push_back(PlannedRow{{{document, 0, length}}});
    }
    if (!open.rows.empty()) batches.push_back(std::move(open));
    WindowPlan out{.batches = {}, .next = read.next, .last = read.last};
    const auto shuffled = document_order(batches.size(), options_.shuffle,
                                         mix64(options_.seed ^ mix64(start.window + 1)), epoch);
    out.batches.reserve(batches.size());
    for (std::size_t k = 0; k < batches.size(); ++k) {
      out.batches.push_back(std::move(batches[shuffled(k)]));
    }
    return out;
  }

  /// Identifies the plan's parameters and lengths (computed once, when the planner is made).
  [[nodiscard]] std::uint64_t fingerprint() const noexcept { return fingerprint_; }

  /// The options the planner was made with.
  [[nodiscard]] const BucketOptions& options() const noexcept { return options_; }

 private:
  /// The fingerprint of the options and of a sample of the lengths.
  [[nodiscard]] std::uint64_t compute_fingerprint() const {
    std::uint64_t hash = plan_fingerprint(
        0x4255434Bull,  // "BUCK"
        lengths_,
        {std::uint64_t{options_.budget}, static_cast<std::uint64_t>(options_.cost),
         std::uint64_t{options_.pad_multiple}, std::uint64_t{options_.window_documents},
         std::uint64_t{options_.shuffle}, options_.seed});
    for (const std::size_t boundary : options_.boundaries) hash = mix64(hash ^ boundary);
    return hash;
  }

  [[nodiscard]] std::size_t bucket(std::size_t length) const noexcept {
    return static_cast<std::size_t>(
        std::lower_bound(options_.boundaries.begin(), options_.boundaries.end(), length) -
        options_.boundaries.begin());
  }

  /// What a batch of `rows` rows of `width` slots costs.
  [[nodiscard]] std::size_t cost(std::size_t rows, std::size_t width) const noexcept {
    return options_.cost == BucketCost::tokens ? rows * width : rows * width * width;
  }

  DocumentLengths lengths_;
  BucketOptions options_;
  std::uint64_t fingerprint_ = 0;
};

}  // namespace stoke

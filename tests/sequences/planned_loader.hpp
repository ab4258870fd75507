// Sequence plans run by stoke's own loaders, for the suites of tests/sequences: random shapes
// of corpus and plan, the loaders of every device of every rank, and checks of a packed batch
// against the documents it came from (read from the tokens themselves, not from the plan).
#pragma once

#include <cstddef>
#include <cstdint>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <stoke/stoke.hpp>

#include "token_corpus.hpp"

namespace stoke::testing {

/// The token padding slots hold in these suites: no document's token (those are >= 0).
inline constexpr std::int32_t test_pad_id = -1;

/// Which planner a shape runs.
enum class PlanKind { concat, concat_shifted, first_fit, best_fit, bucket };

/// One random combination of corpus, plan, split and loader.
struct PlanShape {
  std::vector<std::int32_t> lengths;  ///< every document at least one token
  PlanKind kind = PlanKind::concat;
  std::size_t sequence_length = 16;  ///< S (packing), or the budget's unit (bucketing)
  std::size_t rows = 1;              ///< rows per batch (packing)
  std::size_t window = 2;            ///< batches or documents per plan window
  std::size_t devices = 1;
  std::size_t ranks = 1;
  std::size_t workers = 1;
  Remainder remainder = Remainder::pad;
  std::uint64_t seed = 0;

  [[nodiscard]] std::string describe() const {
    std::ostringstream out;
    out << "documents=" << lengths.size() << " kind=" << static_cast<int>(kind)
        << " S=" << sequence_length << " rows=" << rows << " window=" << window
        << " devices=" << devices << " ranks=" << ranks << " workers=" << workers
        << (remainder == Remainder::pad ? " pad" : " drop") << " seed=" << seed;
    return out.str();
  }
};

/// A random shape from `rng`.
inline PlanShape random_plan_shape(std::mt19937_64& rng) {
  const auto pick = [&](std::size_t low, std::size_t high) {
    return std::uniform_int_distribution<std::size_t>(low, high)(rng);
  };
  PlanShape shape;
  shape.seed = rng();
  shape.lengths = random_lengths(pick(1, 120), pick(1, 90), shape.seed);
  for (auto& length : shape.lengths) length = std::max<std::int32_t>(length, 1);
  shape.kind = static_cast<PlanKind>(pick(0, 4));
  shape.sequence_length = pick(4, 64);
  shape.rows = pick(1, 4);
  shape.window = pick(1, 40);
  shape.devices = pick(1, 4);
  shape.ranks = pick(1, 3);
  shape.workers = pick(0, 3);
  shape.remainder = pick(0, 1) == 0 ? Remainder::pad : Remainder::drop;
  return shape;
}

/// The planner a shape's `PlannedBatcher` runs, whichever its kind: a `WindowPlanner`.
class AnyTestPlanner {
 public:
  explicit AnyTestPlanner(const PlanShape& shape) : kind_(shape.kind) {
    const DocumentLengths lengths(shape.lengths);
    const bool shifted = shape.kind == PlanKind::concat_shifted;
    concat_.emplace(lengths, ConcatOptions{.sequence_length = shape.sequence_length,
                                           .shifted = shifted,
                                           .rows_per_batch = shape.rows,
                                           .window_batches = shape.window,
                                           .seed = shape.seed});
    fit_.emplace(lengths, FitOptions{.sequence_length = shape.sequence_length,
                                     .rows_per_batch = shape.rows,
                                     .window_documents = shape.window,
                                     .seed = shape.seed,
                                     .fit = shape.kind == PlanKind::best_fit ? PackFit::best
                                                                             : PackFit::first});
    std::size_t longest = 1;
    for (const auto length : shape.lengths) longest = std::max<std::size_t>(longest, length);
    bucket_.emplace(lengths,
                    BucketOptions{.budget = std::max(longest, shape.sequence_length * shape.rows),
                                  .boundaries = estimate_bucket_boundaries(lengths, 3),
                                  .window_documents = shape.window,
                                  .seed = shape.seed});
  }

  [[nodiscard]] WindowPlan plan_window(std::size_t epoch, const WindowStart& start) const {
    switch (kind_) {
      case PlanKind::concat:
      case PlanKind::concat_shifted:
        return concat_->plan_window(epoch, start);
      case PlanKind::first_fit:
      case PlanKind::best_fit:
        return fit_->plan_window(epoch, start);
      default:
        return bucket_->plan_window(epoch, start);
    }
  }
  [[nodiscard]] std::uint64_t fingerprint() const {
    switch (kind_) {
      case PlanKind::concat:
      case PlanKind::concat_shifted:
        return concat_->fingerprint();
      case PlanKind::first_fit:
      case PlanKind::best_fit:
        return fit_->fingerprint();
      default:
        return bucket_->fingerprint();
    }
  }

 private:
  PlanKind kind_;
  std::optional<ConcatPlanner> concat_;
  std::optional<FitPlanner> fit_;
  std::optional<BucketPlanner> bucket_;
};

/// The multithread loader of these suites.
using PlannedLoader = MultiThreadLoader<TokenCorpus, PlannedBatcher<AnyTestPlanner>, cpu::Backend>;

/// The loader of `shape` over `corpus` with `workers` threads.
inline PlannedLoader planned_loader(const PlanShape& shape, const TokenCorpus& corpus,
                                    std::size_t workers) {
  LoaderOptions options;
  options.remainder = shape.remainder;
  options.num_workers = workers;
  options.queue_depth = 3;
  return PlannedLoader(corpus, PlannedBatcher<AnyTestPlanner>(AnyTestPlanner(shape), test_pad_id),
                       options);
}

/// One loader per device of every rank: the rank's share, then split over its devices.
template <class Loader = PlannedLoader>
std::vector<Loader> device_loaders(const Loader& loader, std::size_t ranks, std::size_t devices) {
  std::vector<Loader> parts;
  for (std::size_t r = 0; r < ranks; ++r) {
    for (auto& part : split(rank_share(loader, r, ranks), cpu::Backend::devices(devices))) {
      parts.push_back(std::move(part));
    }
  }
  return parts;
}

/// Empty when `packed` is a well-formed packed batch of `TokenCorpus` documents: in each row,
/// segments 1, 2, ... of consecutive tokens of one document with positions from 0, the loss mask
/// 1 but at each segment's end, padding (segment 0, `test_pad_id`, mask 0) only at the row's end,
/// `cu_seqlens` and `documents` as the segments say; else what is wrong first. With `uses`, the
/// first `inputs` slots of every row count one use of their token.
inline std::string packed_batch_fault(const PackedBatch& packed, std::size_t inputs,
                                      std::vector<std::vector<int>>* uses) {
  const std::size_t w = packed.width;
  const std::size_t slots = packed.rows * w;
  if (packed.tokens.size() != slots || packed.segment_ids.size() != slots ||
      packed.positions.size() != slots || packed.loss_mask.size() != slots) {
    return "tensor sizes";
  }
  std::vector<std::int32_t> cu{0};
  std::vector<std::size_t> documents;
  for (std::size_t r = 0; r < packed.rows; ++r) {
    std::int32_t segment = 0;
    std::size_t segment_start = 0;
    for (std::size_t s = 0; s < w; ++s) {
      const std::size_t at = r * w + s;
      const std::string where = "row " + std::to_string(r) + " slot " + std::to_string(s);
      const std::int32_t id = packed.segment_ids[at];
      const std::int32_t token = packed.tokens[at];
      const bool next_same = s + 1 < w && packed.segment_ids[at + 1] == id && id != 0;
      if (id == 0) {
        if (token != test_pad_id || packed.positions[at] != 0 || packed.loss_mask[at] != 0) {
          return where + ": padding slot";
        }
        if (s + 1 < w && packed.segment_ids[at + 1] != 0) return where + ": padding mid-row";
        continue;
      }
      if (id != segment) {
        if (id != segment + 1) return where + ": segment id " + std::to_string(id);
        if (segment != 0) cu.push_back(static_cast<std::int32_t>(r * w + s));
        segment = id;
        segment_start = s;
        if (token < 0) return where + ": token " + std::to_string(token);
        documents.push_back(static_cast<std::size_t>(token) / 4096);
      }
      const std::size_t document = documents.back();
      const std::size_t offset = static_cast<std::size_t>(token) % 4096;
      const std::size_t first = static_cast<std::size_t>(packed.tokens[r * w + segment_start]);
      if (token < 0 || static_cast<std::size_t>(token) / 4096 != document ||
          static_cast<std::size_t>(token) != first + (s - segment_start)) {
        return where + ": token " + std::to_string(token) + " does not continue its document";
      }
      if (packed.positions[at] != static_cast<std::int32_t>(s - segment_start)) {
        return where + ": position";
      }
      if (packed.loss_mask[at] != (next_same ? 1 : 0)) return where + ": loss mask";
      if (uses != nullptr && s < inputs) {
        if (document >= uses->size() || offset >= (*uses)[document].size()) {
          return where + ": token past its document's end";
        }
        ++(*uses)[document][offset];
      }
    }
    if (segment != 0) {
      std::size_t end = w;
      while (end > 0 && packed.segment_ids[r * w + end - 1] == 0) --end;
      cu.push_back(static_cast<std::int32_t>(r * w + end));
    }
    if (cu.back() != static_cast<std::int32_t>((r + 1) * w)) {
      cu.push_back(static_cast<std::int32_t>((r + 1) * w));
    }
  }
  if (packed.cu_seqlens != cu) return "cu_seqlens";
  if (packed.documents != documents) return "documents";
  return {};
}

/// Whether two packed batches hold the same bits.
inline bool same_packed_bits(const PackedBatch& a, const PackedBatch& b) {
  return a.rows == b.rows && a.width == b.width && a.tokens == b.tokens &&
         a.segment_ids == b.segment_ids && a.positions == b.positions &&
         a.cu_seqlens == b.cu_seqlens && a.loss_mask == b.loss_mask && a.documents == b.documents;
}

}  // namespace stoke::testing

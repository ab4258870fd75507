#pragma once
/// @file
/// The plans a Python sequence loader runs, by name: `PlanParameters` (a plan's kind and sizes,
/// as `stoke_loader` passes them) and `plan_of`, the `AnyPlanner` of them over some lengths.

#include <cstddef>
#include <cstdint>
#include <string>

#include <stoke/core/error.hpp>
#include <stoke/sequences/bucket_plan.hpp>
#include <stoke/sequences/pack_concat.hpp>
#include <stoke/sequences/pack_fit.hpp>
#include <stoke/sequences/sequence_plan.hpp>

#include "sequence_planners.hpp"

namespace stoke_python {

/// A plan's kind and sizes, as `stoke_loader` passes them.
struct PlanParameters {
  std::string kind;                 ///< "concat", "first_fit", "best_fit", "bucket" or "pad"
  std::size_t sequence_length = 0;  ///< S (packing)
  std::size_t rows = 1;             ///< rows per batch (packing), sequences per batch (pad)
  bool shifted = false;             ///< concatenation: rows of S + 1 slots
  std::size_t window = 1;           ///< batches (concat, pad) or sequences (fit, bucket) a window
  bool shuffle = true;              ///< shuffle the order under (seed, epoch)
  std::uint64_t seed = 0;           ///< key of the order
  std::size_t budget = 0;           ///< bucketing: the most a batch may cost
  bool attention_cost = false;      ///< bucketing: rows x width x width, not rows x width
  std::size_t multiple = 1;         ///< pad, bucket: widths rounded up to this
  std::size_t buckets = 4;          ///< bucketing: buckets, bounds estimated from the lengths
  bool split_oversize = true;       ///< fit: cut a sequence longer than S (else refuse it)
};

/// The `ConcatPlanner`, `FitPlanner`, `BucketPlanner` or `PadPlanner` of `p` over `lengths`.
inline AnyPlanner plan_of(const stoke::DocumentLengths& lengths, const PlanParameters& p) {
  if (p.kind == "concat") {
    return AnyPlanner(stoke::ConcatPlanner(lengths, {.sequence_length = p.sequence_length,
                                                     .shifted = p.shifted,
                                                     .rows_per_batch = p.rows,
                                                     .window_batches = p.window,
                                                     .shuffle = p.shuffle,
                                                     .seed = p.seed}));
  }
  if (p.kind == "first_fit" || p.kind == "best_fit") {
    return AnyPlanner(stoke::FitPlanner(
        lengths,
        {.sequence_length = p.sequence_length,
         .rows_per_batch = p.rows,
         .window_documents = p.window,
         .shuffle = p.shuffle,
         .seed = p.seed,
         .fit = p.kind == "best_fit" ? stoke::PackFit::best : stoke::PackFit::first,
         .oversize = p.split_oversize ? stoke::Oversize::split : stoke::Oversize::refuse}));
  }
  if (p.kind == "bucket") {
    return AnyPlanner(stoke::BucketPlanner(
        lengths,
        {.budget = p.budget,
         .cost = p.attention_cost ? stoke::BucketCost::attention : stoke::BucketCost::tokens,
         .pad_multiple = p.multiple,
         .boundaries = stoke::estimate_bucket_boundaries(lengths, p.buckets),
         .window_documents = p.window,
         .shuffle = p.shuffle,
         .seed = p.seed}));
  }
  if (p.kind == "pad") {
    return AnyPlanner(PadPlanner(lengths, {.batch_size = p.rows,
                                           .multiple = p.multiple,
                                           .window_batches = p.window,
                                           .shuffle = p.shuffle,
                                           .seed = p.seed}));
  }
  throw stoke::UsageError("stoke_loader: no plan kind \"" + p.kind +
                          "\" (concat, first_fit, best_fit, bucket, pad)");
}

}  // namespace stoke_python

#pragma once
/// @file
/// The row loop every image batcher shares: each row rendered from its own sample with its
/// own random stream, and a sample that fails to decode either rethrown or, under the
/// bad-sample policy, replaced by the next sample of the batch that decodes, and logged.

#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <string>
#include <vector>

#include <stoke/core/error.hpp>
#include <stoke/core/rng.hpp>
#include <stoke/data/sample_context.hpp>
#include <stoke/images/bad_samples.hpp>
#include <stoke/images/image.hpp>

namespace stoke::images::detail {

/// The classes of `items` as int32; throws `InputError` naming `batcher`, the item and its
/// source for a label above `INT32_MAX`.
inline std::vector<std::int32_t> image_labels(const char* batcher,
                                              std::span<const EncodedImage> items) {
  std::vector<std::int32_t> labels;
  labels.reserve(items.size());
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (items[i].label > static_cast<std::uint32_t>(std::numeric_limits<std::int32_t>::max())) {
      throw InputError("stoke: " + std::string(batcher) + ": item " + std::to_string(i) + " (" +
                       items[i].source + ") has label " + std::to_string(items[i].label) +
                       ", which does not fit in int32");
    }
    labels.push_back(static_cast<std::int32_t>(items[i].label));
  }
  return labels;
}

/// Fills rows `[first, last)` of a batch of `items` with `render_row(row, item, rng)`, `rng`
/// being row `row`'s sample stream. A row whose item throws `InputError` rethrows when
/// `policy` allows no bad sample; otherwise the next item of the batch (cyclically) that
/// renders takes its row (with the row's own stream, and its label written to
/// `labels[row]`), and `log` records it, throwing past the policy's limit. Runs inside a
/// loader's `batch` or `fill` (it reads the loader's sample context).
template <class RenderRow>
void fill_image_rows(std::span<const EncodedImage> items, std::size_t first, std::size_t last,
                     const BadSamplePolicy& policy, BadSampleLog& log,
                     std::span<std::int32_t> labels, RenderRow&& render_row) {
  for (std::size_t row = first; row < last; ++row) {
    std::string reason;
    try {
      render_row(row, items[row], sample_rng(row));
      continue;
    } catch (const InputError& error) {
      if (policy.max_per_epoch == 0) throw;
      reason = error.what();
    }
    const SampleContext& context = *current_sample_context();
    bool replaced = false;
    for (std::size_t step = 1; step < items.size() && !replaced; ++step) {
      const std::size_t other = (row + step) % items.size();
      try {
        render_row(row, items[other], sample_rng(row));
      } catch (const InputError&) {
        continue;  // that one is bad too: its own row reports it
      }
      log.record(BadSample{context.epoch, context.indices[row], items[row].source, reason,
                           context.indices[other]},
                 policy);
      labels[row] = static_cast<std::int32_t>(items[other].label);
      replaced = true;
    }
    if (!replaced) {
      throw InputError("stoke: no sample of the batch of " + std::to_string(items.size()) +
                       " could replace bad sample " + std::to_string(context.indices[row]) + " (" +
                       items[row].source + "): every one failed to decode; the first: " + reason);
    }
  }
}

}  // namespace stoke::images::detail

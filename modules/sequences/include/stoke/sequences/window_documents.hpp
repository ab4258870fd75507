#pragma once
/// @file
/// The documents of one plan window of a whole-document planner (first-fit, best-fit, buckets):
/// `window_documents` consecutive positions of the epoch's document order, with their lengths.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <stoke/core/error.hpp>
#include <stoke/sequences/sequence_plan.hpp>

namespace stoke {

/// One document of a plan window: its dataset index and its tokens.
struct WindowDocument {
  std::size_t document = 0;  ///< dataset index
  std::size_t length = 0;    ///< tokens
};

/// The documents of the window at `start` of `window_documents` positions of the epoch's order,
/// and where the next window starts (`last` says whether the window ends the epoch).
struct WindowDocuments {
  std::vector<WindowDocument> documents{};  ///< in order of position
  WindowStart next{};                       ///< the next window
  bool last = false;                        ///< whether the window ends the epoch
};

/// Reads the documents of the window at `start` (see `WindowDocuments`).
[[nodiscard]] inline WindowDocuments read_window_documents(const DocumentLengths& lengths,
                                                           const EpochOrder& order,
                                                           std::size_t window_documents,
                                                           const WindowStart& start) {
  if (window_documents == 0) throw UsageError("stoke: a plan window needs at least one document");
  WindowDocuments out;
  const std::size_t end = std::min(lengths.size(), start.position + window_documents);
  out.documents.reserve(end - std::min(start.position, end));
  for (std::size_t position = start.position; position < end; ++position) {
    const std::size_t document = order(position);
    out.documents.push_back({document, lengths(document)});
  }
  out.next = WindowStart{.window = start.window + 1, .position = end, .token = 0};
  out.last = end >= lengths.size();
  return out;
}

/// `value` rounded up to a multiple of `multiple` (at least 1).
[[nodiscard]] constexpr std::size_t round_up_to_multiple(std::size_t value,
                                                         std::size_t multiple) noexcept {
  return multiple <= 1 ? value : (value + multiple - 1) / multiple * multiple;
}

}  // namespace stoke

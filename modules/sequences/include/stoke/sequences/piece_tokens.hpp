#pragma once
/// @file
/// `TokenSequence`: what a token dataset's items are (a vector or span of 32-bit tokens), and how
/// a planned piece is read from one, checked against the plan's lengths.

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include <stoke/core/error.hpp>
#include <stoke/sequences/sequence_plan.hpp>

namespace stoke {

/// A sequence of tokens: converts to `std::span<const std::int32_t>` (a
/// `std::vector<std::int32_t>`, a span, an array).
template <class I>
concept TokenSequence = std::convertible_to<const I&, std::span<const std::int32_t>>;

/// The tokens of `piece` in `document` (read from the dataset); a document shorter than the plan
/// says is an `InputError` naming it.
[[nodiscard]] inline std::span<const std::int32_t> piece_tokens(
    std::span<const std::int32_t> document, const DocumentPiece& piece) {
  if (piece.end > document.size()) {
    throw InputError("stoke: document " + std::to_string(piece.document) + " has " +
                     std::to_string(document.size()) + " tokens, but the plan reads tokens [" +
                     std::to_string(piece.begin) + ", " + std::to_string(piece.end) +
                     ") of it: its length is not the one planned with");
  }
  return document.subspan(piece.begin, piece.size());
}

}  // namespace stoke

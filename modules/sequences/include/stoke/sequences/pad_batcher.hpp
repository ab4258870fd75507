#pragma once
/// @file
/// `PadBatcher`: a `Batcher` of variable-length token sequences that pads each batch to its
/// longest sequence (or to a multiple of N) with an explicit mask taken from the lengths, so a
/// real token equal to the pad id is never masked.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include <stoke/sequences/piece_tokens.hpp>
#include <stoke/sequences/window_documents.hpp>

namespace stoke {

/// A padded batch: `rows` sequences of `width` slots, row-major, real tokens first.
struct PaddedBatch {
  std::size_t rows = 0;                 ///< sequences in the batch
  std::size_t width = 0;                ///< slots per row: the longest, rounded up
  std::vector<std::int32_t> tokens{};   ///< rows x width; padding slots hold the pad id
  std::vector<std::uint8_t> mask{};     ///< rows x width; 1 for a real token, 0 for padding
  std::vector<std::int32_t> lengths{};  ///< real tokens of each row
};

/// Pads a batch of token sequences to the longest (rounded up to `multiple`), filling with
/// `pad_id`; the mask comes from each sequence's length, never from comparing token values.
struct PadBatcher {
  std::int32_t pad_id = 0;   ///< the token padding slots hold
  std::size_t multiple = 1;  ///< the width is rounded up to a multiple of this (1: the longest)

  /// The padded batch of `items`, on the host (any device argument).
  template <TokenSequence I, class D>
  [[nodiscard]] PaddedBatch batch(std::vector<I> items, const D& /*device*/) const {
    PaddedBatch out;
    out.rows = items.size();
    std::size_t longest = 0;
    for (const I& item : items)
      longest = std::max(longest, std::span<const std::int32_t>(item).size());
    out.width = round_up_to_multiple(longest, multiple);
    out.tokens.assign(out.rows * out.width, pad_id);
    out.mask.assign(out.rows * out.width, 0);
    out.lengths.reserve(out.rows);
    for (std::size_t row = 0; row < out.rows; ++row) {
      const std::span<const std::int32_t> tokens(items[row]);
      std::copy(tokens.begin(), tokens.end(), out.tokens.begin() + row * out.width);
      std::fill_n(out.mask.begin() + row * out.width, tokens.size(), std::uint8_t{1});
      out.lengths.push_back(static_cast<std::int32_t>(tokens.size()));
    }
    return out;
  }
};

}  // namespace stoke

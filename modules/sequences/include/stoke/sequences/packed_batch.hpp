#pragma once
/// @file
/// `PackedBatch` and `make_packed_batch`: the tensors of a planned batch (packed, bucketed or
/// padded): tokens, per-token segment ids, positions that restart at each document, `cu_seqlens`
/// for variable-length attention, and a loss mask that stops at document ends.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include <stoke/core/error.hpp>
#include <stoke/data/dataset.hpp>
#include <stoke/sequences/piece_tokens.hpp>
#include <stoke/sequences/sequence_plan.hpp>

namespace stoke {

/// The tensors of one planned batch: `rows` rows of `width` slots, row-major.
///
/// A row's *segments* are its pieces of documents, numbered 1, 2, ... in the row; padding is
/// segment 0. `cu_seqlens` are the cumulative lengths of the segments over the flattened batch,
/// each row's padding counted as a segment of its own so the offsets cover every slot (as
/// FlashAttention's variable-length kernels want them). `loss_mask[t]` is 1 when slot `t + 1`
/// of the row holds the next token of the same segment: 0 at every document end, on padding and
/// at the row's last slot (with shifted rows of S + 1 slots, the inputs are the first S).
struct PackedBatch {
  std::size_t rows = 0;                     ///< rows in the batch
  std::size_t width = 0;                    ///< slots per row
  std::vector<std::int32_t> tokens{};       ///< rows x width; padding slots hold the pad id
  std::vector<std::int32_t> segment_ids{};  ///< rows x width; 1, 2, ... per row; 0 for padding
  std::vector<std::int32_t> positions{};    ///< rows x width; from 0 at each segment; 0 on padding
  std::vector<std::int32_t> cu_seqlens{};   ///< 0, then the end of each segment (padding included)
  std::vector<std::uint8_t> loss_mask{};    ///< rows x width; 1 where the next slot continues it
  std::vector<std::size_t> documents{};     ///< the document of each segment, in order
};

/// The tensors of `plan`, reading each piece's tokens from `dataset` (whose items are token
/// sequences), with `pad_id` in padding slots.
template <Dataset S>
  requires TokenSequence<dataset_item_t<S>>
[[nodiscard]] PackedBatch make_packed_batch(const PlannedBatch& plan, const S& dataset,
                                            std::int32_t pad_id = 0) {
  PackedBatch out;
  out.rows = plan.rows.size();
  out.width = plan.width;
  const std::size_t slots = out.rows * out.width;
  out.tokens.assign(slots, pad_id);
  out.segment_ids.assign(slots, 0);
  out.positions.assign(slots, 0);
  out.loss_mask.assign(slots, 0);
  out.cu_seqlens.push_back(0);
  std::int32_t offset = 0;
  for (std::size_t row = 0; row < out.rows; ++row) {
    const std::size_t base = row * out.width;
    std::size_t filled = 0;
    std::int32_t segment = 0;
    for (const DocumentPiece& piece : plan.rows[row].pieces) {
      const auto item = dataset.get(piece.document);
      const std::span<const std::int32_t> tokens = piece_tokens(item, piece);
      if (filled + tokens.size() > out.width) {
        throw UsageError("stoke: row " + std::to_string(row) +
                         " of the planned batch holds more "
                         "than its " +
                         std::to_string(out.width) + " slots (document " +
                         std::to_string(piece.document) + ")");
      }
      ++segment;
      for (std::size_t t = 0; t < tokens.size(); ++t) {
        const std::size_t slot = base + filled + t;
        out.tokens[slot] = tokens[t];
        out.segment_ids[slot] = segment;
        out.positions[slot] = static_cast<std::int32_t>(t);
        out.loss_mask[slot] = t + 1 < tokens.size() ? 1 : 0;
      }
      filled += tokens.size();
      offset += static_cast<std::int32_t>(tokens.size());
      out.cu_seqlens.push_back(offset);
      out.documents.push_back(piece.document);
    }
    if (filled < out.width) {
      offset += static_cast<std::int32_t>(out.width - filled);
      out.cu_seqlens.push_back(offset);
    }
  }
  return out;
}

}  // namespace stoke

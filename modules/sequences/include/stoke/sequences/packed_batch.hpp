#pragma once
/// @file
/// `PackedBatch` and `make_packed_batch`: the tensors of a planned batch (packed, bucketed or
/// padded): tokens, per-token segment ids, positions that restart at each document, `cu_seqlens`
/// for variable-length attention, and a loss mask that stops at document ends; in one block of
/// pooled host memory (`PackedArray`), written once.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <numeric>
#include <span>
#include <string>
#include <vector>

#include <stoke/core/buffer_pool.hpp>
#include <stoke/core/error.hpp>
#include <stoke/data/dataset.hpp>
#include <stoke/sequences/piece_tokens.hpp>
#include <stoke/sequences/sequence_plan.hpp>

namespace stoke {

/// `size()` values of `T` of a `PackedBatch`, in the batch's one block of pooled host memory
/// (shared by the copies of the batch, and given back to its pool when the last is dropped). A
/// contiguous range: `data()`, `size()`, `operator[]`, iterators; compares equal to another
/// array or to a `std::vector` of the same values.
template <class T>
class PackedArray {
 public:
  /// No values.
  PackedArray() = default;
  /// The `size` values at `data`, in `storage`.
  PackedArray(std::shared_ptr<const HostBuffer> storage, T* data, std::size_t size) noexcept
      : storage_(std::move(storage)), data_(data), size_(size) {}

  /// The first value (null when empty).
  [[nodiscard]] T* data() const noexcept { return data_; }
  /// Number of values.
  [[nodiscard]] std::size_t size() const noexcept { return size_; }
  /// Whether there are none.
  [[nodiscard]] bool empty() const noexcept { return size_ == 0; }
  /// Value `i`.
  [[nodiscard]] T& operator[](std::size_t i) const noexcept { return data_[i]; }
  /// The first value.
  [[nodiscard]] T* begin() const noexcept { return data_; }
  /// One past the last value.
  [[nodiscard]] T* end() const noexcept { return data_ + size_; }
  /// The values, copied into a vector.
  [[nodiscard]] std::vector<T> to_vector() const { return {begin(), end()}; }

  /// Whether both hold the same values.
  friend bool operator==(const PackedArray& a, const PackedArray& b) noexcept {
    return std::equal(a.begin(), a.end(), b.begin(), b.end());
  }
  /// Whether `a` holds the values of `b`.
  friend bool operator==(const PackedArray& a, const std::vector<T>& b) noexcept {
    return std::equal(a.begin(), a.end(), b.begin(), b.end());
  }

 private:
  std::shared_ptr<const HostBuffer> storage_;  ///< keeps the values' memory
  T* data_ = nullptr;
  std::size_t size_ = 0;
};

/// The tensors of one planned batch: `rows` rows of `width` slots, row-major.
///
/// A row's *segments* are its pieces of documents, numbered 1, 2, ... in the row; padding is
/// segment 0. `cu_seqlens` are the cumulative lengths of the segments over the flattened batch,
/// each row's padding counted as a segment of its own so the offsets cover every slot (as
/// FlashAttention's variable-length kernels want them). `loss_mask[t]` is 1 when slot `t + 1`
/// of the row holds the next token of the same segment: 0 at every document end, on padding and
/// at the row's last slot (with shifted rows of S + 1 slots, the inputs are the first S).
///
/// The five tensors lie in one block of host memory from a `BufferPool` (`make_packed_batch`):
/// recycled rather than allocated for every batch, and, when a device backend lent the pool its
/// staging memory (`prefetch_to_device` does, for a `PlannedBatcher`), the very bytes its DMA
/// uploads. Copies of a batch share that block.
struct PackedBatch {
  std::size_t rows = 0;                     ///< rows in the batch
  std::size_t width = 0;                    ///< slots per row
  PackedArray<std::int32_t> tokens{};       ///< rows x width; padding slots hold the pad id
  PackedArray<std::int32_t> segment_ids{};  ///< rows x width; 1, 2, ... per row; 0 for padding
  PackedArray<std::int32_t> positions{};    ///< rows x width; from 0 at each segment; 0 on padding
  PackedArray<std::int32_t> cu_seqlens{};   ///< 0, then the end of each segment (padding included)
  PackedArray<std::uint8_t> loss_mask{};    ///< rows x width; 1 where the next slot continues it
  std::vector<std::size_t> documents{};     ///< the document of each segment, in order
};

/// The tensors of `plan`, reading each piece's tokens from `dataset` (whose items are token
/// sequences), with `pad_id` in padding slots, in one buffer of `pool` (a pool of its own, which
/// keeps nothing, by default). Every slot is written once: pieces copied, padding filled, with no
/// zeroing first.
template <Dataset S>
  requires TokenSequence<dataset_item_t<S>>
[[nodiscard]] PackedBatch make_packed_batch(const PlannedBatch& plan, const S& dataset,
                                            std::int32_t pad_id = 0,
                                            const BufferPool& pool = BufferPool(0)) {
  PackedBatch out;
  out.rows = plan.rows.size();
  out.width = plan.width;
  const std::size_t slots = out.rows * out.width;
  std::size_t segments = 1;  // cu_seqlens: 0, then one end per piece and per padded row
  for (const PlannedRow& row : plan.rows) {
    segments += row.pieces.size() + (row.tokens() < out.width ? 1 : 0);
  }
  const std::size_t words = 3 * slots + segments;
  auto storage = std::make_shared<HostBuffer>(
      pool.acquire(words * sizeof(std::int32_t) + slots * sizeof(std::uint8_t)));
  auto* const base = reinterpret_cast<std::int32_t*>(storage->data());
  auto* const mask = reinterpret_cast<std::uint8_t*>(base + words);
  const std::shared_ptr<const HostBuffer> shared = std::move(storage);
  out.tokens = {shared, base, slots};
  out.segment_ids = {shared, base + slots, slots};
  out.positions = {shared, base + 2 * slots, slots};
  out.cu_seqlens = {shared, base + 3 * slots, segments};
  out.loss_mask = {shared, mask, slots};
  out.documents.reserve(segments);
  std::int32_t* cu = out.cu_seqlens.data();
  *cu++ = 0;
  std::int32_t offset = 0;
  for (std::size_t row = 0; row < out.rows; ++row) {
    const std::size_t first = row * out.width;
    std::size_t filled = 0;
    std::int32_t segment = 0;
    for (const DocumentPiece& piece : plan.rows[row].pieces) {
      const auto item = dataset.get(piece.document);
      const std::span<const std::int32_t> tokens = piece_tokens(item, piece);
      if (filled + tokens.size() > out.width) {
        throw UsageError("stoke: row " + std::to_string(row) +
                         " of the planned batch holds more than its " + std::to_string(out.width) +
                         " slots (document " + std::to_string(piece.document) + ")");
      }
      ++segment;
      const std::size_t at = first + filled;
      const std::size_t count = tokens.size();
      std::copy(tokens.begin(), tokens.end(), out.tokens.data() + at);
      std::fill_n(out.segment_ids.data() + at, count, segment);
      std::iota(out.positions.data() + at, out.positions.data() + at + count, 0);
      if (count > 0) {
        std::fill_n(out.loss_mask.data() + at, count - 1, std::uint8_t{1});
        out.loss_mask[at + count - 1] = 0;  // the document's (or the piece's) last token
      }
      filled += count;
      offset += static_cast<std::int32_t>(count);
      *cu++ = offset;
      out.documents.push_back(piece.document);
    }
    if (filled < out.width) {  // padding: the rest of the row
      const std::size_t at = first + filled;
      const std::size_t count = out.width - filled;
      std::fill_n(out.tokens.data() + at, count, pad_id);
      std::fill_n(out.segment_ids.data() + at, count, 0);
      std::fill_n(out.positions.data() + at, count, 0);
      std::fill_n(out.loss_mask.data() + at, count, std::uint8_t{0});
      offset += static_cast<std::int32_t>(count);
      *cu++ = offset;
    }
  }
  return out;
}

}  // namespace stoke

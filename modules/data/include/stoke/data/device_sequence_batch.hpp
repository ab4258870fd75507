#pragma once
/// @file
/// The one road of a variable-length batch (packed, bucketed or padded sequences) to a device:
/// `HostSequenceBatch`, what such a host batch holds; `UploadSequenceBatch`, the stage that
/// uploads its tensors; `DeviceSequenceBatch`, the batch on the device.

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <ranges>
#include <span>
#include <type_traits>
#include <utility>
#include <vector>

#include <stoke/core/staging.hpp>

namespace stoke {

/// A contiguous, sized range of `V` (a `std::vector<V>`, a `PackedArray<V>`).
template <class R, class V>
concept HostArrayOf =
    std::ranges::contiguous_range<const R&> && std::ranges::sized_range<const R&> &&
    std::same_as<std::remove_cv_t<std::ranges::range_value_t<const R&>>, V>;

/// A host batch of token sequences, `rows` rows of `width` slots, row-major (as
/// `PackedBatch` is).
///
/// Requirements:
/// 1. `b.rows` and `b.width` are the shape;
/// 2. `b.tokens`, `b.segment_ids` and `b.positions` are contiguous ranges of `std::int32_t`
///    (`HostArrayOf`) of `rows x width`; `b.loss_mask` one of `std::uint8_t` of as many;
/// 3. `b.cu_seqlens` is a contiguous range of `std::int32_t`: 0, then the end of every segment.
template <class T>
concept HostSequenceBatch = requires(const T& batch) {
  { batch.rows } -> std::convertible_to<std::size_t>;
  { batch.width } -> std::convertible_to<std::size_t>;
  requires HostArrayOf<decltype(batch.tokens), std::int32_t>;
  requires HostArrayOf<decltype(batch.segment_ids), std::int32_t>;
  requires HostArrayOf<decltype(batch.positions), std::int32_t>;
  requires HostArrayOf<decltype(batch.cu_seqlens), std::int32_t>;
  requires HostArrayOf<decltype(batch.loss_mask), std::uint8_t>;
};

/// A batch of token sequences in a device's memory (`Buffer`, a backend's buffer with a
/// `device()`), ready when `ready` (the backend's `Fence`) signals: what `prefetch_to_device`
/// makes of a `HostSequenceBatch`. The tensors are those of the host batch, byte for byte.
template <class Buffer, class Fence>
struct DeviceSequenceBatch {
  Buffer tokens;          ///< `rows x width` int32: the tokens, the pad id on padding
  Buffer positions;       ///< `rows x width` int32: from 0 at every segment
  Buffer segment_ids;     ///< `rows x width` int32: 1, 2, ... per row; 0 on padding
  Buffer cu_seqlens;      ///< int32: 0, then the end of every segment over the flattened batch
  Buffer loss_mask;       ///< `rows x width` uint8: 1 where the next slot continues the segment
  std::size_t rows = 0;   ///< rows in the batch
  std::size_t width = 0;  ///< slots per row
  Fence ready;            ///< signals when every tensor above holds its values

  /// The device the batch lives on.
  [[nodiscard]] decltype(auto) device() const noexcept { return tokens.device(); }
};

/// The stage of `HostSequenceBatch`es: its five tensors uploaded one after the other, into a
/// `DeviceSequenceBatch` whose `ready` fence is the last copy's, ordered after the others: by an
/// `after` fence where the stager's `upload` takes one (Vulkan), by the copy stream's order
/// otherwise (CUDA).
struct UploadSequenceBatch {
  /// Starts the uploads of `host`'s tensors with `stager`.
  template <class Stager, HostSequenceBatch T>
  auto operator()(Stager& stager, const T& host) const {
    auto tokens = stager.upload(std::as_bytes(std::span(host.tokens)));
    using Fence = decltype(tokens.fence);
    Fence last = tokens.fence;
    const auto next = [&](std::span<const std::byte> bytes) {
      auto staged = [&] {
        if constexpr (requires { stager.upload(bytes, std::span<const Fence>()); }) {
          return stager.upload(bytes, std::span<const Fence>(&last, 1));
        } else {
          return stager.upload(bytes);
        }
      }();
      last = staged.fence;
      return std::move(staged.value);
    };
    auto positions = next(std::as_bytes(std::span(host.positions)));
    auto segment_ids = next(std::as_bytes(std::span(host.segment_ids)));
    auto cu_seqlens = next(std::as_bytes(std::span(host.cu_seqlens)));
    auto loss_mask = next(std::as_bytes(std::span(host.loss_mask)));
    using Buffer = decltype(positions);
    using Batch = DeviceSequenceBatch<Buffer, Fence>;
    Fence ready = last;
    return Staged<Batch, Fence>{
        Batch{std::move(tokens.value), std::move(positions), std::move(segment_ids),
              std::move(cu_seqlens), std::move(loss_mask), host.rows, host.width, ready},
        std::move(last)};
  }
};

}  // namespace stoke

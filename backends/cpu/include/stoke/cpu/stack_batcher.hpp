#pragma once
/// @file
/// `cpu::StackBatcher`: stacks samples of numbers into one `cpu::Tensor`, scaling on the way.

#include <concepts>
#include <cstddef>
#include <ranges>
#include <string>
#include <type_traits>
#include <vector>

#include <stoke/core/error.hpp>
#include <stoke/cpu/buffer_pool.hpp>
#include <stoke/cpu/device.hpp>
#include <stoke/cpu/tensor.hpp>

namespace stoke::cpu {

namespace detail {
/// A number `StackBatcher` can convert.
///
/// Requirements, one of:
/// 1. `V` is an arithmetic type;
/// 2. `V` is `std::byte` (converted as `unsigned`).
template <class V>
concept Number = std::is_arithmetic_v<V> || std::same_as<V, std::byte>;

/// `value` as an `Out`.
template <class Out, class V>
constexpr Out to_number(V value) noexcept {
  if constexpr (std::same_as<V, std::byte>) {
    return static_cast<Out>(std::to_integer<unsigned>(value));
  } else {
    return static_cast<Out>(value);
  }
}

/// A range of numbers: what `StackBatcher` stacks into a row.
///
/// Requirements:
/// 1. `const Item&` is a contiguous range;
/// 2. its values, without `const` or `volatile`, are `Number`s.
template <class Item>
concept NumberRange = std::ranges::contiguous_range<const Item&> &&
                      Number<std::remove_cv_t<std::ranges::range_value_t<const Item&>>>;

}  // namespace detail

/// A batch of equally long ranges being stacked into `Tensor<Out>` rows (see `ChunkedBatcher`):
/// `fill` may run on several threads at once for disjoint rows.
template <class Out, detail::NumberRange Item>
class PendingStack {
 public:
  /// Checks that every item has as many elements as the first (an `InputError` names the
  /// one that has not), and allocates the uninitialised `{items.size(), length}` tensor.
  PendingStack(std::vector<Item> items, Out scale, Out offset, const Device& device,
               const BufferPool& pool)
      : items_(std::move(items)), scale_(scale), offset_(offset) {
    const std::size_t length = items_.empty() ? 0 : std::ranges::size(items_.front());
    for (std::size_t i = 0; i < items_.size(); ++i) {
      if (std::ranges::size(items_[i]) != length) {
        throw InputError("stoke: StackBatcher: item " + std::to_string(i) + " of the batch has " +
                         std::to_string(std::ranges::size(items_[i])) + " elements, item 0 has " +
                         std::to_string(length));
      }
    }
    out_ = Tensor<Out>::uninitialized({items_.size(), length}, device, pool);
  }

  /// Number of rows: one per item.
  [[nodiscard]] std::size_t rows() const noexcept { return items_.size(); }

  /// Writes rows `[first, last)`: `element * scale + offset`.
  void fill(std::size_t first, std::size_t last) {
    // Locals, not members: the output could alias `scale_` and `offset_` (both `Out`), which
    // would make the compiler reload them for every element and stall the vector loop.
    const Out mul = scale_;
    const Out add = offset_;
    for (std::size_t i = first; i < last; ++i) {
      auto row = out_.row(i);
      auto source = std::ranges::begin(items_[i]);
      for (std::size_t k = 0; k < row.size(); ++k) {
        row[k] = detail::to_number<Out>(source[k]) * mul + add;
      }
    }
  }

  /// The stacked batch, once every row was filled.
  [[nodiscard]] Tensor<Out> finish() && { return std::move(out_); }

 private:
  std::vector<Item> items_;
  Tensor<Out> out_;
  Out scale_;
  Out offset_;
};

/// Stacks a batch of samples into a `Tensor<Out>` on the requested device, computing
/// `value * scale + offset` for every element (for example `1/255` to normalise bytes).
///
/// - a sample that is a number gives a tensor of shape `{n}`;
/// - a sample that is a contiguous range of numbers (or bytes) gives shape `{n, length}`;
///   samples of different lengths are refused with an `InputError` naming both. Such a
///   batch can also be made in chunks on several threads (`begin_batch`, a `ChunkedBatcher`).
///
/// Batch storage comes from `pool`, which copies of the batcher share (a loader's workers
/// batch with copies): a batch's memory is recycled once the batch is destroyed.
template <class Out = float>
struct StackBatcher {
  Out scale = Out{1};   ///< multiplies every element
  Out offset = Out{0};  ///< then added to every element
  BufferPool pool{};    ///< where batch storage comes from, shared with copies of the batcher

  /// The stacked batch, on `device`.
  template <class Item>
    requires detail::Number<Item> || detail::NumberRange<Item>
  Tensor<Out> batch(std::vector<Item> items, const Device& device) const {
    if constexpr (detail::Number<Item>) {
      const Out mul = scale;  // locals, not members: see PendingStack::fill
      const Out add = offset;
      auto out = Tensor<Out>::uninitialized({items.size()}, device, pool);
      for (std::size_t i = 0; i < items.size(); ++i) {
        out.values()[i] = detail::to_number<Out>(items[i]) * mul + add;
      }
      return out;
    } else {
      PendingStack<Out, Item> pending = begin_batch(std::move(items), device);
      pending.fill(0, pending.rows());
      return std::move(pending).finish();
    }
  }

  /// The batch of ranges `items`, checked and allocated on `device`, to be filled in chunks.
  template <detail::NumberRange Item>
  PendingStack<Out, Item> begin_batch(std::vector<Item> items, const Device& device) const {
    return PendingStack<Out, Item>(std::move(items), scale, offset, device, pool);
  }
};

}  // namespace stoke::cpu

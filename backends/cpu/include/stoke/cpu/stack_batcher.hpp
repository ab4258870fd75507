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
template <class V>
concept Number = std::is_arithmetic_v<V> || std::same_as<V, std::byte>;

template <class Out, class V>
constexpr Out to_number(V value) noexcept {
  if constexpr (std::same_as<V, std::byte>) {
    return static_cast<Out>(std::to_integer<unsigned>(value));
  } else {
    return static_cast<Out>(value);
  }
}
}  // namespace detail

/// Stacks a batch of samples into a `Tensor<Out>` on the requested device, computing
/// `value * scale + offset` for every element (for example `1/255` to normalise bytes).
///
/// - a sample that is a number gives a tensor of shape `{n}`;
/// - a sample that is a contiguous range of numbers (or bytes) gives shape `{n, length}`;
///   samples of different lengths are refused with an `InputError` naming both.
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
  requires detail::Number<Item> ||
      (std::ranges::contiguous_range<const Item&>&&
           detail::Number<std::remove_cv_t<std::ranges::range_value_t<const Item&>>>)
          Tensor<Out> batch(std::vector<Item> items, const Device& device) const {
    // Locals, not members: the output could alias `scale` and `offset` (both `Out`), which
    // would make the compiler reload them for every element and stall the vector loop.
    const Out mul = scale;
    const Out add = offset;
    if constexpr (detail::Number<Item>) {
      auto out = Tensor<Out>::uninitialized({items.size()}, device, pool);
      for (std::size_t i = 0; i < items.size(); ++i) {
        out.values()[i] = detail::to_number<Out>(items[i]) * mul + add;
      }
      return out;
    } else {
      const std::size_t length = items.empty() ? 0 : std::ranges::size(items.front());
      auto out = Tensor<Out>::uninitialized({items.size(), length}, device, pool);
      for (std::size_t i = 0; i < items.size(); ++i) {
        const auto& item = items[i];
        if (std::ranges::size(item) != length) {
          throw InputError("stoke: StackBatcher: item " + std::to_string(i) + " of the batch has " +
                           std::to_string(std::ranges::size(item)) + " elements, item 0 has " +
                           std::to_string(length));
        }
        auto row = out.row(i);
        auto source = std::ranges::begin(item);
        for (std::size_t k = 0; k < length; ++k) {
          row[k] = detail::to_number<Out>(source[k]) * mul + add;
        }
      }
      return out;
    }
  }
};

}  // namespace stoke::cpu

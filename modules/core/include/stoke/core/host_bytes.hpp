#pragma once
/// @file
/// `HostBytes`: host data that an upload sends as its bytes (a contiguous range of numbers,
/// or a tensor whose `values()` are one), and `host_bytes`, the view of those bytes.

#include <cstddef>
#include <ranges>
#include <span>
#include <type_traits>

namespace stoke {

namespace detail {
/// A range that can be uploaded as its bytes.
///
/// Requirements:
/// 1. `const R&` is a contiguous and sized range;
/// 2. its values are trivially copyable.
template <class R>
concept TrivialContiguousRange =
    std::ranges::contiguous_range<const R&> && std::ranges::sized_range<const R&> &&
    std::is_trivially_copyable_v<std::ranges::range_value_t<const R&>>;

template <class R>
std::span<const std::byte> bytes_of_range(const R& range) {
  return std::as_bytes(std::span(std::ranges::data(range), std::ranges::size(range)));
}
}  // namespace detail

/// Host bytes: host data the default upload understands.
///
/// Requirements, one of:
/// 1. `T` is a contiguous, sized range of trivially copyable values (`std::vector<float>`);
/// 2. `t.values()` is such a range, viewing values `t` owns (`cpu::Tensor`).
template <class T>
concept HostBytes = detail::TrivialContiguousRange<T> || requires(const T& data) {
  { data.values() } -> detail::TrivialContiguousRange;
};

/// The bytes of host data, as the default upload sends them (a view, not a copy).
template <HostBytes T>
[[nodiscard]] std::span<const std::byte> host_bytes(const T& data) {
  if constexpr (detail::TrivialContiguousRange<T>) {
    return detail::bytes_of_range(data);
  } else {
    return detail::bytes_of_range(data.values());
  }
}

}  // namespace stoke

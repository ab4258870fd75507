#pragma once
/// @file
/// `stoke::check_index`: the bounds check every dataset's `get` makes, with an error that names
/// the dataset, the index and the size.

#include <cstddef>
#include <string>
#include <string_view>

#include <stoke/core/error.hpp>

namespace stoke {

namespace detail {

/// Throws the `UsageError` of `check_index` (kept out of line of the fast path).
[[noreturn]] inline void throw_index_out_of_range(std::size_t index, std::size_t size,
                                                  std::string_view dataset) {
  throw UsageError("stoke: " + std::string(dataset) + " index " + std::to_string(index) +
                   " is out of range for size " + std::to_string(size));
}

}  // namespace detail

/// Throws `UsageError` naming `dataset`, `index` and `size` unless `index < size`.
inline void check_index(std::size_t index, std::size_t size, std::string_view dataset) {
  if (index >= size) [[unlikely]] {
    detail::throw_index_out_of_range(index, size, dataset);
  }
}

}  // namespace stoke

#pragma once
/// @file
/// What every dataset view shares: the bounds check of `get`, the type `get` returns, and a
/// prefetch hint for bulk reads.

#include <cstddef>
#include <string>
#include <string_view>
#include <utility>

#include <stoke/core/error.hpp>

namespace stoke::detail {

/// Exactly what `get` returns on a `const S` (a reference type where `S::get` returns one).
template <class S>
using get_result_t = decltype(std::declval<const S&>().get(std::size_t{}));

/// Throws the `UsageError` of `check_index` (kept out of line of the fast path).
[[noreturn]] inline void throw_index_out_of_range(std::size_t index, std::size_t size,
                                                  std::string_view dataset) {
  throw UsageError("stoke: " + std::string(dataset) + " index " + std::to_string(index) +
                   " is out of range for size " + std::to_string(size));
}

/// Throws `UsageError` naming `dataset`, `index` and `size` unless `index < size`.
inline void check_index(std::size_t index, std::size_t size, std::string_view dataset) {
  if (index >= size) [[unlikely]] {
    throw_index_out_of_range(index, size, dataset);
  }
}

/// Asks the processor to start loading the cache line at `address` (a hint; no effect where the
/// compiler has no prefetch built-in).
inline void prefetch(const void* address) noexcept {
#if defined(__GNUC__) || defined(__clang__)
  __builtin_prefetch(address);
#else
  (void)address;
#endif
}

}  // namespace stoke::detail

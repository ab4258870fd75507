#pragma once
/// @file
/// What every dataset view shares: the type `get` returns and a prefetch hint for bulk reads
/// (and, through <stoke/data/check_index.hpp>, the bounds check of `get`).

#include <cstddef>
#include <utility>

#include <stoke/data/check_index.hpp>

namespace stoke::detail {

/// Exactly what `get` returns on a `const S` (a reference type where `S::get` returns one).
template <class S>
using get_result_t = decltype(std::declval<const S&>().get(std::size_t{}));

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

#pragma once
/// @file
/// The chunk cache stoke gives each open HDF5 variable: room for every chunk that one slab of
/// chunk rows touches, so that reading the rows of a chunk one after another reads and
/// decompresses each chunk once.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <vector>

namespace stoke {

/// libhdf5's chunk cache settings of one open variable (`H5Pset_chunk_cache`). Both are 0 for a
/// variable that is not chunked (the cache is then unused).
struct Hdf5ChunkCache {
  std::size_t slots = 0;  ///< hash table slots, a prime
  std::size_t bytes = 0;  ///< bytes of decompressed chunks held at most

  friend bool operator==(const Hdf5ChunkCache&, const Hdf5ChunkCache&) = default;
};

namespace detail {

/// libhdf5's default chunk cache size (1 MiB), stoke's least.
inline constexpr std::size_t hdf5_default_cache_bytes = std::size_t{1} << 20U;
/// Most hash table slots stoke asks for (8 MiB of table).
inline constexpr std::size_t hdf5_max_cache_slots = std::size_t{1} << 20U;

/// The smallest prime at least `n` (at least 2).
constexpr std::size_t next_prime(std::size_t n) noexcept {
  for (std::size_t candidate = std::max<std::size_t>(n, 2);; ++candidate) {
    bool prime = true;
    for (std::size_t d = 2; d * d <= candidate && prime; ++d) prime = candidate % d != 0;
    if (prime) return candidate;
  }
}

/// `a * b`, or 2^62 when that is more (sizes computed here saturate instead of overflowing).
constexpr std::size_t saturating_times(std::size_t a, std::size_t b) noexcept {
  constexpr std::size_t limit = std::size_t{1} << 62U;
  return (b != 0 && a > limit / b) ? limit : std::min(a * b, limit);
}

/// Chunks across one slab of chunk rows of a variable of `shape` chunked by `chunk`: the
/// product over d >= 1 of ceil(shape[d] / chunk[d]) (at least 1, saturating).
inline std::size_t hdf5_chunks_across(const std::vector<std::size_t>& shape,
                                      const std::vector<std::size_t>& chunk) {
  std::size_t across = 1;
  for (std::size_t d = 1; d < shape.size() && d < chunk.size(); ++d) {
    const std::size_t extent = std::max<std::size_t>(chunk[d], 1);
    const std::size_t count = shape[d] / extent + (shape[d] % extent != 0 ? 1 : 0);
    across = saturating_times(across, std::max<std::size_t>(count, 1));
  }
  return across;
}

/// The chunk cache of a variable of `shape`, chunked by `chunk` (empty: not chunked), of
/// `element_bytes` elements, held to at most `max_bytes`:
/// - bytes: one slab of chunk rows, that is every chunk that rows `[k * chunk[0], (k + 1) *
///   chunk[0])` touch (chunk bytes times `hdf5_chunks_across`), at least libhdf5's default
///   1 MiB, at most `max_bytes`. Reading the rows of a slab one by one, or the sorted rows of a
///   batch, then finds each of its chunks in the cache after the first read; a single read of
///   a row range reads each chunk it touches once anyway (libhdf5 visits it chunk by chunk).
/// - slots: a prime 100 times the chunks that fit (libhdf5's advice), from 521 to about 2^20.
inline Hdf5ChunkCache hdf5_chunk_cache(const std::vector<std::size_t>& shape,
                                       const std::vector<std::size_t>& chunk,
                                       std::size_t element_bytes, std::size_t max_bytes) {
  if (chunk.empty() || chunk.size() != shape.size()) return {};
  std::size_t chunk_bytes = element_bytes;
  for (const std::size_t extent : chunk) {
    chunk_bytes = saturating_times(chunk_bytes, std::max<std::size_t>(extent, 1));
  }
  const std::size_t slab = saturating_times(chunk_bytes, hdf5_chunks_across(shape, chunk));
  Hdf5ChunkCache cache;
  cache.bytes = std::min(std::max(slab, hdf5_default_cache_bytes), max_bytes);
  const std::size_t fitting = std::max<std::size_t>(cache.bytes / chunk_bytes, 1);
  cache.slots = next_prime(
      std::clamp<std::size_t>(saturating_times(fitting, 100), 521, hdf5_max_cache_slots));
  return cache;
}

/// Most chunks one `H5Dread` of stoke touches: libhdf5 (1.10) maps every chunk of a selection
/// before reading it, a few hundred bytes each, so a read of many small chunks (a small file may
/// declare millions) is made in pieces.
inline constexpr std::size_t hdf5_max_chunks_per_read = 4096;

/// Rows of one read of a variable of `shape` chunked by `chunk` (empty: not chunked, no limit):
/// as many whole chunk rows as keep a read within `hdf5_max_chunks_per_read` chunks, at least
/// one chunk row.
inline std::size_t hdf5_rows_per_read(const std::vector<std::size_t>& shape,
                                      const std::vector<std::size_t>& chunk) {
  if (chunk.empty() || chunk.size() != shape.size()) {
    return std::numeric_limits<std::size_t>::max();
  }
  const std::size_t slabs =
      std::max<std::size_t>(hdf5_max_chunks_per_read / hdf5_chunks_across(shape, chunk), 1);
  return saturating_times(std::max<std::size_t>(chunk.front(), 1), slabs);
}

}  // namespace detail
}  // namespace stoke

#pragma once
/// @file
/// The input of the token store harness: the size of the `.bin` file (u32, little-endian, at
/// most `max_bin_bytes`), then the bytes of the `.idx` file. The `.bin` file's bytes count up,
/// so that a sequence read out of place shows. fuzz_seeds packs stores TokenStoreWriter wrote.

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

namespace stoke::fuzz {

/// The largest `.bin` file a fuzzed input makes (64 KiB).
inline constexpr std::uint32_t max_bin_bytes = std::uint32_t{1} << 16;

/// An input: a `.bin` of `bin_size` bytes beside the `.idx` bytes `idx`.
inline std::vector<std::uint8_t> token_store_input(std::uint32_t bin_size,
                                                   const std::vector<std::uint8_t>& idx) {
  std::vector<std::uint8_t> input(4);
  std::memcpy(input.data(), &bin_size, 4);
  input.insert(input.end(), idx.begin(), idx.end());
  return input;
}

}  // namespace stoke::fuzz

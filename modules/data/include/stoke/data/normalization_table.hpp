#pragma once
/// @file
/// The one expression that turns an image byte into a normalised float. Every batcher that
/// normalises bytes (the CPU batcher on the host, the CUDA kernel on the device) looks values
/// up in this table, so their batches are equal bit for bit by construction.

#include <array>
#include <cstddef>

namespace stoke {

/// `table[b] = (b / 255 - mean) / std` in float32, for every byte value `b`.
[[nodiscard]] inline std::array<float, 256> normalization_table(float mean, float std) noexcept {
  std::array<float, 256> table{};
  for (std::size_t value = 0; value < table.size(); ++value) {
    table[value] = (static_cast<float>(value) / 255.0F - mean) / std;
  }
  return table;
}

}  // namespace stoke

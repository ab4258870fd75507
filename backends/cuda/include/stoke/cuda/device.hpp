#pragma once
/// @file
/// `cuda::Device`: one CUDA device by ordinal (`cuda:0`, `cuda:1`, ...).

#include <cstddef>
#include <functional>
#include <ostream>

namespace stoke::cuda {

/// A CUDA device, named by its ordinal among the visible devices (`CUDA_VISIBLE_DEVICES`).
struct Device {
  int ordinal = 0;  ///< what `cudaSetDevice` takes

  friend bool operator==(const Device&, const Device&) = default;
  /// Prints `cuda:<ordinal>`.
  friend std::ostream& operator<<(std::ostream& out, const Device& device) {
    return out << "cuda:" << device.ordinal;
  }
};

}  // namespace stoke::cuda

/// Hashes a CUDA device by its ordinal.
template <>
struct std::hash<stoke::cuda::Device> {
  std::size_t operator()(const stoke::cuda::Device& device) const noexcept {
    return std::hash<int>{}(device.ordinal);
  }
};

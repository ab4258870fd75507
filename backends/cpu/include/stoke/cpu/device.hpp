#pragma once
/// @file
/// `cpu::Device`: a logical CPU device (`cpu:0`, `cpu:1`, ...).

#include <cstddef>
#include <functional>
#include <ostream>

namespace stoke::cpu {

/// A logical CPU device. All share the host's memory; each gets its own thread in the
/// learner, so several CPU devices model data-parallel training on one machine.
struct Device {
  std::size_t index = 0;  ///< which logical device

  friend bool operator==(const Device&, const Device&) = default;
  /// Prints `cpu:<index>`.
  friend std::ostream& operator<<(std::ostream& out, const Device& device) {
    return out << "cpu:" << device.index;
  }
};

}  // namespace stoke::cpu

/// Hashes a CPU device by its index.
template <>
struct std::hash<stoke::cpu::Device> {
  std::size_t operator()(const stoke::cpu::Device& device) const noexcept {
    return std::hash<std::size_t>{}(device.index);
  }
};

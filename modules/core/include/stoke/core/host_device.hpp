#pragma once
/// @file
/// `HostDevice`: a device that computes in host memory (`cpu:0`, `cpu:1`, ...), the
/// device of the CPU backend (`cpu::Device`) and of host batchers.

#include <cstddef>
#include <functional>
#include <ostream>

namespace stoke {

/// A CPU device. All share the host's memory; each gets its own thread in the
/// learner, so several CPU devices model data-parallel training on one machine.
struct HostDevice {
  std::size_t index = 0;  ///< which device

  friend bool operator==(const HostDevice&, const HostDevice&) = default;
  /// Prints `cpu:<index>`.
  friend std::ostream& operator<<(std::ostream& out, const HostDevice& device) {
    return out << "cpu:" << device.index;
  }
};

}  // namespace stoke

/// Hashes a host device by its index.
template <>
struct std::hash<stoke::HostDevice> {
  std::size_t operator()(const stoke::HostDevice& device) const noexcept {
    return std::hash<std::size_t>{}(device.index);
  }
};

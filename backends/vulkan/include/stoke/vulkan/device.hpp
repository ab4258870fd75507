#pragma once
/// @file
/// `vulkan::Device`: one stoke device on Vulkan (`vulkan:0`, `vulkan:1`, ...).

#include <cstddef>
#include <functional>
#include <ostream>

namespace stoke::vulkan {

/// A stoke device on Vulkan: one `VkDevice` with its own queue. Several may share one physical
/// device, as lanes (lavapipe has one; tests run two or more `VkDevice`s on it): device `k` is
/// lane `k / P` of physical device `k % P`, as `cuda::lanes_over` lays devices over GPUs.
struct Device {
  std::size_t index = 0;  ///< which device (`k` above)

  friend bool operator==(const Device&, const Device&) = default;
  /// Prints `vulkan:<index>`.
  friend std::ostream& operator<<(std::ostream& out, const Device& device) {
    return out << "vulkan:" << device.index;
  }
};

}  // namespace stoke::vulkan

/// Hashes a Vulkan device by its index.
template <>
struct std::hash<stoke::vulkan::Device> {
  std::size_t operator()(const stoke::vulkan::Device& device) const noexcept {
    return std::hash<std::size_t>{}(device.index);
  }
};

#pragma once
/// @file
/// `vulkan::Device`: one logical Vulkan device (`vulkan:0`, `vulkan:1`, ...).

#include <cstddef>
#include <functional>
#include <ostream>

namespace stoke::vulkan {

/// A logical Vulkan device: one `VkDevice` with its own queue. Several may share one
/// physical device (lavapipe has one; tests run two or more `VkDevice`s on it).
struct Device {
  std::size_t index = 0;  ///< which logical device

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

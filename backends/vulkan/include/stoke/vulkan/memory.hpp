#pragma once
/// @file
/// `vulkan::DeviceMemory`: one `VkDeviceMemory` allocation (RAII), mapped when host-visible.

#include <cstddef>
#include <cstdint>
#include <utility>

#include <vulkan/vulkan_core.h>

#include <stoke/vulkan/error.hpp>

namespace stoke::vulkan {

/// An allocation of device memory; freed on destruction (which also unmaps it). The device
/// must outlive it (its owner, such as `Buffer`, keeps the device's context alive).
class DeviceMemory {
 public:
  /// No memory.
  DeviceMemory() = default;
  /// Allocates `size` bytes of memory type `type` on `device`, mapped when `map` is set.
  DeviceMemory(VkDevice device, std::uint32_t type, VkDeviceSize size, bool map) : device_(device) {
    const VkMemoryAllocateInfo info{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO, nullptr, size, type};
    STOKE_VK_CHECK(vkAllocateMemory(device_, &info, nullptr, &handle_));
    if (map) {
      void* mapped = nullptr;
      const VkResult result = vkMapMemory(device_, handle_, 0, VK_WHOLE_SIZE, 0, &mapped);
      if (result < 0) {
        vkFreeMemory(device_, handle_, nullptr);
        throw DeviceError(result, "vkMapMemory");
      }
      mapped_ = static_cast<std::byte*>(mapped);
    }
  }
  /// Takes ownership of `memory` (allocated on `device`, not mapped).
  [[nodiscard]] static DeviceMemory adopt(VkDevice device, VkDeviceMemory memory) noexcept {
    DeviceMemory adopted;
    adopted.device_ = device;
    adopted.handle_ = memory;
    return adopted;
  }
  DeviceMemory(DeviceMemory&& other) noexcept
      : device_(other.device_),
        handle_(std::exchange(other.handle_, VK_NULL_HANDLE)),
        mapped_(std::exchange(other.mapped_, nullptr)) {}
  DeviceMemory& operator=(DeviceMemory&& other) noexcept {
    if (this != &other) {
      free();
      device_ = other.device_;
      handle_ = std::exchange(other.handle_, VK_NULL_HANDLE);
      mapped_ = std::exchange(other.mapped_, nullptr);
    }
    return *this;
  }
  DeviceMemory(const DeviceMemory&) = delete;
  DeviceMemory& operator=(const DeviceMemory&) = delete;
  ~DeviceMemory() { free(); }

  /// The memory handle.
  [[nodiscard]] VkDeviceMemory handle() const noexcept { return handle_; }
  /// The host address of the mapped memory, or null when not mapped.
  [[nodiscard]] std::byte* mapped() const noexcept { return mapped_; }
  /// Gives up ownership: the caller frees the returned handle.
  [[nodiscard]] VkDeviceMemory release() noexcept {
    mapped_ = nullptr;
    return std::exchange(handle_, VK_NULL_HANDLE);
  }

 private:
  void free() noexcept {
    if (handle_ != VK_NULL_HANDLE) vkFreeMemory(device_, handle_, nullptr);
    handle_ = VK_NULL_HANDLE;
    mapped_ = nullptr;
  }

  VkDevice device_ = VK_NULL_HANDLE;
  VkDeviceMemory handle_ = VK_NULL_HANDLE;
  std::byte* mapped_ = nullptr;
};

}  // namespace stoke::vulkan

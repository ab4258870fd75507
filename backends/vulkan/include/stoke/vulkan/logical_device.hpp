#pragma once
/// @file
/// What stoke needs of a physical device, and `LogicalDevice`: one `VkDevice` (RAII) with
/// one queue, created with timeline semaphores enabled.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <vulkan/vulkan_core.h>

#include <stoke/vulkan/error.hpp>
#include <stoke/vulkan/instance.hpp>

namespace stoke::vulkan::detail {

/// A physical device stoke can use: Vulkan 1.2, timeline semaphores, a compute queue family
/// (which can also copy).
struct PhysicalDevice {
  VkPhysicalDevice handle = VK_NULL_HANDLE;
  std::uint32_t queue_family = 0;
  VkPhysicalDeviceProperties properties{};
  VkPhysicalDeviceMemoryProperties memory{};
};

/// `handle` described, or `std::nullopt` with the reason in `why_not` when stoke cannot use it.
inline std::optional<PhysicalDevice> inspect(VkPhysicalDevice handle, std::string& why_not) {
  PhysicalDevice device{handle, 0, {}, {}};
  vkGetPhysicalDeviceProperties(handle, &device.properties);
  vkGetPhysicalDeviceMemoryProperties(handle, &device.memory);
  const std::string name = device.properties.deviceName;
  if (device.properties.apiVersion < VK_API_VERSION_1_2) {
    why_not = name + " supports Vulkan " +
              std::to_string(VK_API_VERSION_MAJOR(device.properties.apiVersion)) + "." +
              std::to_string(VK_API_VERSION_MINOR(device.properties.apiVersion)) +
              ", stoke needs 1.2";
    return std::nullopt;
  }
  VkPhysicalDeviceVulkan12Features features12{};
  features12.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES;
  VkPhysicalDeviceFeatures2 features{};
  features.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2;
  features.pNext = &features12;
  vkGetPhysicalDeviceFeatures2(handle, &features);
  if (features12.timelineSemaphore != VK_TRUE) {
    why_not = name + " has no timeline semaphores";
    return std::nullopt;
  }
  std::uint32_t count = 0;
  vkGetPhysicalDeviceQueueFamilyProperties(handle, &count, nullptr);
  std::vector<VkQueueFamilyProperties> families(count);
  vkGetPhysicalDeviceQueueFamilyProperties(handle, &count, families.data());
  for (std::uint32_t family = 0; family < count; ++family) {
    if ((families[family].queueFlags & VK_QUEUE_COMPUTE_BIT) != 0 &&
        families[family].queueCount > 0) {
      device.queue_family = family;
      return device;
    }
  }
  why_not = name + " has no compute queue";
  return std::nullopt;
}

/// One `VkDevice` with one queue of the physical device's compute family. Keeps the instance
/// alive; destroyed when the last object made on it (context, semaphore, fence) is gone.
class LogicalDevice {
 public:
  /// Creates the device on `physical`, with timeline semaphores enabled.
  LogicalDevice(std::shared_ptr<const Instance> instance, PhysicalDevice physical)
      : instance_(std::move(instance)), physical_(physical) {
    const float priority = 1.0F;
    const VkDeviceQueueCreateInfo queue{VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO,
                                        nullptr,
                                        0,
                                        physical_.queue_family,
                                        1,
                                        &priority};
    VkPhysicalDeviceVulkan12Features features12{};
    features12.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES;
    features12.timelineSemaphore = VK_TRUE;
    const VkDeviceCreateInfo info{VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO,
                                  &features12,
                                  0,
                                  1,
                                  &queue,
                                  0,
                                  nullptr,
                                  0,
                                  nullptr,
                                  nullptr};
    STOKE_VK_CHECK(vkCreateDevice(physical_.handle, &info, nullptr, &handle_));
    vkGetDeviceQueue(handle_, physical_.queue_family, 0, &queue_);
  }
  LogicalDevice(const LogicalDevice&) = delete;
  LogicalDevice& operator=(const LogicalDevice&) = delete;
  /// Waits until the device is idle (its queue thread done), then destroys it.
  ~LogicalDevice() {
    vkDeviceWaitIdle(handle_);
    vkDestroyDevice(handle_, nullptr);
  }

  /// The device handle.
  [[nodiscard]] VkDevice handle() const noexcept { return handle_; }
  /// Its one queue (externally synchronised: `Context` submits under a lock).
  [[nodiscard]] VkQueue queue() const noexcept { return queue_; }
  /// The physical device it runs on.
  [[nodiscard]] const PhysicalDevice& physical() const noexcept { return physical_; }

  /// A memory type allowed by `bits` with all `required` flags, preferring `preferred` ones.
  [[nodiscard]] std::uint32_t memory_type(std::uint32_t bits, VkMemoryPropertyFlags required,
                                          VkMemoryPropertyFlags preferred) const {
    std::optional<std::uint32_t> fallback;
    for (std::uint32_t type = 0; type < physical_.memory.memoryTypeCount; ++type) {
      const VkMemoryPropertyFlags flags = physical_.memory.memoryTypes[type].propertyFlags;
      if ((bits & (1U << type)) == 0 || (flags & required) != required) continue;
      if ((flags & preferred) == preferred) return type;
      if (!fallback) fallback = type;
    }
    if (!fallback) throw DeviceError(VK_ERROR_FEATURE_NOT_PRESENT, "finding a memory type");
    return *fallback;
  }

 private:
  std::shared_ptr<const Instance> instance_;
  PhysicalDevice physical_;
  VkDevice handle_ = VK_NULL_HANDLE;
  VkQueue queue_ = VK_NULL_HANDLE;
};

}  // namespace stoke::vulkan::detail

#pragma once
/// @file
/// `vulkan::TimelineSemaphore`: a Vulkan 1.2 timeline semaphore (RAII), the fence primitive
/// of the Vulkan backend.

#include <cstdint>
#include <limits>
#include <memory>
#include <utility>

#include <vulkan/vulkan_core.h>

#include <stoke/vulkan/error.hpp>
#include <stoke/vulkan/logical_device.hpp>

namespace stoke::vulkan {

/// A timeline semaphore: a 64-bit counter that queue submissions (or the host) raise, and
/// that the host or later submissions wait on.
class TimelineSemaphore {
 public:
  /// A semaphore on `device` starting at `initial`.
  explicit TimelineSemaphore(std::shared_ptr<const detail::LogicalDevice> device,
                             std::uint64_t initial = 0)
      : device_(std::move(device)) {
    const VkSemaphoreTypeCreateInfo type{VK_STRUCTURE_TYPE_SEMAPHORE_TYPE_CREATE_INFO, nullptr,
                                         VK_SEMAPHORE_TYPE_TIMELINE, initial};
    const VkSemaphoreCreateInfo info{VK_STRUCTURE_TYPE_SEMAPHORE_CREATE_INFO, &type, 0};
    STOKE_VK_CHECK(vkCreateSemaphore(device_->handle(), &info, nullptr, &handle_));
  }
  TimelineSemaphore(const TimelineSemaphore&) = delete;
  TimelineSemaphore& operator=(const TimelineSemaphore&) = delete;
  ~TimelineSemaphore() { vkDestroySemaphore(device_->handle(), handle_, nullptr); }

  /// The semaphore handle.
  [[nodiscard]] VkSemaphore handle() const noexcept { return handle_; }
  /// The device it belongs to.
  [[nodiscard]] const detail::LogicalDevice& device() const noexcept { return *device_; }

  /// The counter now.
  [[nodiscard]] std::uint64_t value() const {
    std::uint64_t value = 0;
    STOKE_VK_CHECK(vkGetSemaphoreCounterValue(device_->handle(), handle_, &value));
    return value;
  }
  /// Raises the counter to `value` from the host.
  void signal(std::uint64_t value) const {
    const VkSemaphoreSignalInfo info{VK_STRUCTURE_TYPE_SEMAPHORE_SIGNAL_INFO, nullptr, handle_,
                                     value};
    STOKE_VK_CHECK(vkSignalSemaphore(device_->handle(), &info));
  }
  /// Blocks until the counter reaches `value`; throws `DeviceError` if the device is lost.
  void wait(std::uint64_t value) const {
    const VkSemaphoreWaitInfo info{
        VK_STRUCTURE_TYPE_SEMAPHORE_WAIT_INFO, nullptr, 0, 1, &handle_, &value};
    STOKE_VK_CHECK(
        vkWaitSemaphores(device_->handle(), &info, std::numeric_limits<std::uint64_t>::max()));
  }

 private:
  std::shared_ptr<const detail::LogicalDevice> device_;
  VkSemaphore handle_ = VK_NULL_HANDLE;
};

}  // namespace stoke::vulkan

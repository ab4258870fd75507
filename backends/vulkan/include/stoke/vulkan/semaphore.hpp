#pragma once
/// @file
/// `vulkan::TimelineSemaphore`: a Vulkan 1.2 timeline semaphore (RAII), the fence primitive
/// of the Vulkan backend.

#include <atomic>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include <vulkan/vulkan_core.h>

#include <stoke/vulkan/error.hpp>
#include <stoke/vulkan/logical_device.hpp>
#include <stoke/vulkan/thread_counts.hpp>

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
  /// Records that the submission signalling `value` was handed to the queue: from then on,
  /// `wait` waits for values only once a submission of them was.
  void queued(std::uint64_t value) const {
    queue_timeline_.store(true);
    if (value > queued_.load()) {
      queued_.store(value);
      queued_.notify_all();
    }
  }
  /// Raises the counter to `value` from the host.
  void signal(std::uint64_t value) const {
    const VkSemaphoreSignalInfo info{VK_STRUCTURE_TYPE_SEMAPHORE_SIGNAL_INFO, nullptr, handle_,
                                     value};
    STOKE_VK_CHECK(vkSignalSemaphore(device_->handle(), &info));
    if (value > host_signalled_.load()) host_signalled_.store(value);
    std::vector<std::function<void()>> due;
    {
      const std::lock_guard lock(listeners_mutex_);
      std::erase_if(listeners_, [&](auto& listener) {
        if (listener.first > value) return false;
        due.push_back(std::move(listener.second));
        return true;
      });
    }
    for (const auto& listener : due) listener();
  }
  /// Calls `listener` once, after the `signal` that raises it to `value` or beyond (a context
  /// holding submissions behind this gate hands them to its queue then). Register it before
  /// checking `host_signalled`, so a signal between the two is not missed.
  void on_signal(std::uint64_t value, std::function<void()> listener) const {
    const std::lock_guard lock(listeners_mutex_);
    listeners_.emplace_back(value, std::move(listener));
  }
  /// The highest value `signal` raised it to (what a gate only the host signals has reached,
  /// known without asking the driver).
  [[nodiscard]] std::uint64_t host_signalled() const noexcept { return host_signalled_.load(); }
  /// Blocks until the counter reaches `value`; throws `DeviceError` if the device is lost.
  /// Counted in the calling thread's `host_waits()`. On a queue's timeline (see `queued`) it
  /// first waits until the submission that signals `value` was handed to the queue (one held
  /// behind a gate is handed over later), so the driver never waits on a signal not yet made.
  void wait(std::uint64_t value) const {
    ++detail::thread_counts().host_waits;
    if (queue_timeline_.load()) {
      for (std::uint64_t queued = queued_.load(); queued < value; queued = queued_.load()) {
        queued_.wait(queued);
      }
    }
    const VkSemaphoreWaitInfo info{
        VK_STRUCTURE_TYPE_SEMAPHORE_WAIT_INFO, nullptr, 0, 1, &handle_, &value};
    STOKE_VK_CHECK(
        vkWaitSemaphores(device_->handle(), &info, std::numeric_limits<std::uint64_t>::max()));
  }

 private:
  std::shared_ptr<const detail::LogicalDevice> device_;
  VkSemaphore handle_ = VK_NULL_HANDLE;
  mutable std::atomic<bool> queue_timeline_ = false;  ///< whether `queued` was ever called
  mutable std::atomic<std::uint64_t> queued_ = 0;     ///< the highest value handed to the queue
  mutable std::atomic<std::uint64_t> host_signalled_ = 0;  ///< the highest value `signal` set
  mutable std::mutex listeners_mutex_;
  /// Called after the `signal` that reaches their value.
  mutable std::vector<std::pair<std::uint64_t, std::function<void()>>> listeners_;
};

}  // namespace stoke::vulkan

#pragma once
/// @file
/// `vulkan::host_waits()`: how many times the calling thread blocked on the device (a
/// `TimelineSemaphore::wait`, which every fence wait, download and idle wait goes through).
/// The learner's step must not block: a test counts the waits of a device thread across steps.

#include <cstdint>

namespace stoke::vulkan {

namespace detail {

/// The calling thread's count of host waits on a Vulkan semaphore.
inline std::uint64_t& host_wait_count() noexcept {
  thread_local std::uint64_t count = 0;
  return count;
}

}  // namespace detail

/// The host waits on a Vulkan device (a semaphore wait) the calling thread has made so far.
[[nodiscard]] inline std::uint64_t host_waits() noexcept {
  return detail::host_wait_count();
}

}  // namespace stoke::vulkan

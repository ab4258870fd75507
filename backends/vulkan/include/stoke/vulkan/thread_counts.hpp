#pragma once
/// @file
/// What the calling thread has done on Vulkan devices, counted for the tests of a learner's
/// step, which must neither block (`host_waits()`: a `TimelineSemaphore::wait`, which every
/// fence wait, download and idle wait goes through) nor make device buffers after its first
/// epoch (`device_buffers_made()`: `MemoryKind::device` buffers, new or reused from their
/// context; staging buffers are not counted).

#include <cstdint>

namespace stoke::vulkan {

/// The counts of one thread.
struct ThreadCounts {
  std::uint64_t host_waits = 0;           ///< waits on a Vulkan semaphore
  std::uint64_t device_buffers_made = 0;  ///< device buffers made
};

namespace detail {

/// The calling thread's counts, which the semaphore and the buffer add to.
inline ThreadCounts& thread_counts() noexcept {
  thread_local ThreadCounts counts;
  return counts;
}

}  // namespace detail

/// The host waits on a Vulkan device (a semaphore wait) the calling thread has made so far.
[[nodiscard]] inline std::uint64_t host_waits() noexcept {
  return detail::thread_counts().host_waits;
}

/// The device buffers the calling thread has made so far (staging buffers not counted).
[[nodiscard]] inline std::uint64_t device_buffers_made() noexcept {
  return detail::thread_counts().device_buffers_made;
}

}  // namespace stoke::vulkan

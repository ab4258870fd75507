#pragma once
/// @file
/// `vulkan::detail::HeldSubmissions`: recorded command buffers that wait on a gate the host has
/// not opened yet (a timeline semaphore the host signals, such as a collective's), kept in
/// queue order and submitted once their gates are open. The queue never receives a wait that
/// no submitted work or earlier host signal satisfies, so the step can order device work after
/// host work without the device thread waiting for it.

#include <cstdint>
#include <deque>
#include <memory>
#include <vector>

#include <vulkan/vulkan_core.h>

#include <stoke/vulkan/semaphore.hpp>

namespace stoke::vulkan::detail {

/// One recorded submission: its command buffer, what it waits on and the timeline value it
/// signals.
struct HeldSubmission {
  VkCommandBuffer commands = VK_NULL_HANDLE;  ///< recorded and ended
  std::vector<VkSemaphore> semaphores;        ///< waited on (the gates included)
  std::vector<std::uint64_t> values;          ///< the value of each
  /// The host-signalled semaphores among them, with the value each must reach.
  std::vector<std::pair<std::shared_ptr<const TimelineSemaphore>, std::uint64_t>> gates;
  std::uint64_t signal = 0;  ///< the queue's timeline value it signals

  /// Whether the host opened every gate it waits on.
  [[nodiscard]] bool ready() const {
    for (const auto& [gate, value] : gates) {
      if (gate->host_signalled() < value) return false;
    }
    return true;
  }
};

/// Held submissions in queue order. Not thread-safe: its context's lock guards it.
class HeldSubmissions {
 public:
  /// Whether none is held.
  [[nodiscard]] bool empty() const noexcept { return held_.empty(); }
  /// Holds `submission` behind those held before.
  void hold(HeldSubmission submission) { held_.push_back(std::move(submission)); }
  /// Hands `submit` every submission from the front whose gates are open, in order.
  template <class Submit>
  void release_ready(Submit&& submit) {
    while (!held_.empty() && held_.front().ready()) {
      HeldSubmission next = std::move(held_.front());
      held_.pop_front();
      submit(next);
    }
  }

 private:
  std::deque<HeldSubmission> held_;
};

}  // namespace stoke::vulkan::detail

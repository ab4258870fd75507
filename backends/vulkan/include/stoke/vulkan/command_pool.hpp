#pragma once
/// @file
/// `vulkan::CommandPool`: a `VkCommandPool` (RAII) whose command buffers are recycled once
/// the submission that last used them has completed.

#include <cstdint>
#include <vector>

#include <vulkan/vulkan_core.h>

#include <stoke/core/error.hpp>
#include <stoke/vulkan/error.hpp>

namespace stoke::vulkan {

/// Command buffers of one queue family, reused after their work completed. Not thread-safe:
/// its owner (`Context`) serialises access.
class CommandPool {
 public:
  /// A pool on `device` for `queue_family` whose buffers can be reset one by one.
  CommandPool(VkDevice device, std::uint32_t queue_family) : device_(device) {
    const VkCommandPoolCreateInfo info{VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO, nullptr,
                                       VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT,
                                       queue_family};
    STOKE_VK_CHECK(vkCreateCommandPool(device_, &info, nullptr, &handle_));
  }
  CommandPool(const CommandPool&) = delete;
  CommandPool& operator=(const CommandPool&) = delete;
  /// Frees the pool and all its command buffers (none may be pending).
  ~CommandPool() { vkDestroyCommandPool(device_, handle_, nullptr); }

  /// A command buffer ready to record: one whose last submission signalled a value at most
  /// `completed`, or a new one.
  [[nodiscard]] VkCommandBuffer acquire(std::uint64_t completed) {
    for (auto& entry : buffers_) {
      if (!entry.claimed && entry.busy_until <= completed) {
        entry.claimed = true;
        return entry.buffer;
      }
    }
    const VkCommandBufferAllocateInfo info{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO, nullptr,
                                           handle_, VK_COMMAND_BUFFER_LEVEL_PRIMARY, 1};
    VkCommandBuffer buffer = VK_NULL_HANDLE;
    STOKE_VK_CHECK(vkAllocateCommandBuffers(device_, &info, &buffer));
    buffers_.push_back(Entry{buffer, 0, true});
    return buffer;
  }

  /// Hands `buffer` back; it is reused once the timeline reaches `busy_until`.
  void release(VkCommandBuffer buffer, std::uint64_t busy_until) {
    for (auto& entry : buffers_) {
      if (entry.buffer == buffer) {
        entry.claimed = false;
        entry.busy_until = busy_until;
        return;
      }
    }
    throw UsageError("stoke: vulkan: released a command buffer of another pool");
  }

  /// Command buffers allocated so far.
  [[nodiscard]] std::size_t size() const noexcept { return buffers_.size(); }

 private:
  struct Entry {
    VkCommandBuffer buffer;
    std::uint64_t busy_until;
    bool claimed;
  };

  VkDevice device_;
  VkCommandPool handle_ = VK_NULL_HANDLE;
  std::vector<Entry> buffers_;
};

}  // namespace stoke::vulkan

#pragma once
/// @file
/// `vulkan::RetiredBuffers`: buffers their owners dropped, freed once their last use has
/// completed, or kept (a bounded few) for the next buffer of the same size.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <optional>
#include <vector>

#include <vulkan/vulkan_core.h>

namespace stoke::vulkan {

/// Dropped buffers of one device. Freeing waits for the buffer's last use without blocking
/// anyone; device-memory buffers marked reusable are kept, at most `keep` of them, so that
/// a loader making one batch buffer per step reuses memory instead of allocating it anew
/// (allocation is the dominant cost of an upload otherwise). Thread-safe.
class RetiredBuffers {
 public:
  /// One dropped buffer.
  struct Entry {
    VkBuffer buffer = VK_NULL_HANDLE;
    VkDeviceMemory memory = VK_NULL_HANDLE;
    VkDeviceSize bytes = 0;      ///< its size if it may be reused, 0 if it must be freed
    std::uint64_t last_use = 0;  ///< the timeline value after which nothing uses it
  };

  /// Dropped buffers of `device`, keeping at most `keep` for reuse.
  RetiredBuffers(VkDevice device, std::size_t keep) : device_(device), keep_(keep) {}
  RetiredBuffers(const RetiredBuffers&) = delete;
  RetiredBuffers& operator=(const RetiredBuffers&) = delete;
  /// Frees everything: the owner has waited for the device to be idle.
  ~RetiredBuffers() {
    for (const Entry& entry : entries_) free(entry);
  }

  /// Takes `entry`; `completed` is the timeline value reached now.
  void add(const Entry& entry, std::uint64_t completed) {
    std::lock_guard lock(mutex_);
    if (entry.bytes == 0 && entry.last_use <= completed) {
      free(entry);
      return;
    }
    entries_.push_back(entry);
    trim(completed);
  }

  /// A kept buffer of `bytes` whose last use has completed by `completed`, handed over.
  [[nodiscard]] std::optional<Entry> take(VkDeviceSize bytes, std::uint64_t completed) {
    std::lock_guard lock(mutex_);
    const auto it = std::find_if(entries_.begin(), entries_.end(), [&](const Entry& entry) {
      return entry.bytes == bytes && entry.last_use <= completed;
    });
    if (it == entries_.end()) return std::nullopt;
    const Entry entry = *it;
    entries_.erase(it);
    return entry;
  }

  /// Frees what is no longer used and not kept.
  void collect(std::uint64_t completed) {
    std::lock_guard lock(mutex_);
    std::erase_if(entries_, [&](const Entry& entry) {
      if (entry.bytes != 0 || entry.last_use > completed) return false;
      free(entry);
      return true;
    });
    trim(completed);
  }

  /// Buffers kept for reuse now.
  [[nodiscard]] std::size_t kept() const {
    std::lock_guard lock(mutex_);
    return static_cast<std::size_t>(std::count_if(
        entries_.begin(), entries_.end(), [](const Entry& entry) { return entry.bytes != 0; }));
  }

 private:
  /// Frees the oldest unused reusable buffers beyond `keep_`.
  void trim(std::uint64_t completed) {
    std::size_t reusable = 0;
    for (const Entry& entry : entries_) reusable += entry.bytes != 0 ? 1 : 0;
    for (auto it = entries_.begin(); reusable > keep_ && it != entries_.end();) {
      if (it->bytes != 0 && it->last_use <= completed) {
        free(*it);
        it = entries_.erase(it);
        --reusable;
      } else {
        ++it;
      }
    }
  }

  void free(const Entry& entry) const noexcept {
    vkDestroyBuffer(device_, entry.buffer, nullptr);
    vkFreeMemory(device_, entry.memory, nullptr);
  }

  VkDevice device_;
  std::size_t keep_;
  mutable std::mutex mutex_;
  std::vector<Entry> entries_;
};

}  // namespace stoke::vulkan

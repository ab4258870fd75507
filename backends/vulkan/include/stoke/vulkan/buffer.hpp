#pragma once
/// @file
/// `vulkan::Buffer`: a `VkBuffer` with its memory (RAII), which remembers the submitted work
/// that writes and uses it, so readers wait for its data and freeing waits for its users.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <utility>

#include <vulkan/vulkan_core.h>

#include <stoke/core/error.hpp>
#include <stoke/vulkan/context.hpp>
#include <stoke/vulkan/device.hpp>
#include <stoke/vulkan/error.hpp>
#include <stoke/vulkan/fence.hpp>
#include <stoke/vulkan/memory.hpp>
#include <stoke/vulkan/thread_counts.hpp>

namespace stoke::vulkan {

/// Where a buffer's memory lives.
enum class MemoryKind {
  device,   ///< device-local where the device has it: what batches live in
  staging,  ///< host-visible, coherent and mapped: what uploads and downloads go through
};

/// A buffer of bytes on one device. Move-only. It can be a copy source or destination and a
/// storage buffer. Work submitted on it is recorded with `mark_written` / `mark_used`:
/// `written()` is the fence readers wait on, and dropping the buffer while work still uses it
/// hands it to its context, which frees it when that work completes (no wait, no hazard) or
/// keeps it for the next device buffer of the same size.
/// One thread uses a buffer at a time.
class Buffer {
 public:
  /// No buffer.
  Buffer() = default;
  /// `size` bytes on `context`'s device, of `kind` memory. A device buffer reuses one of
  /// the same size that was dropped and is no longer used, when its context kept one.
  Buffer(std::shared_ptr<Context> context, std::size_t size, MemoryKind kind = MemoryKind::device)
      : context_(std::move(context)),
        device_(context_->device()),
        size_(size),
        // Room for at least one 32-bit word, rounded up to whole words (shaders read words).
        bytes_((std::max<std::size_t>(size, 4) + 3) / 4 * 4),
        reusable_(kind == MemoryKind::device) {
    if (reusable_) {
      ++detail::thread_counts().device_buffers_made;
      if (auto kept = context_->reuse(bytes_)) {
        handle_ = kept->buffer;
        memory_ = DeviceMemory::adopt(context_->handle(), kept->memory);
        written_ = used_ = kept->last_use;  // completed; writers still order after it
        return;
      }
    }
    const VkBufferCreateInfo info{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO,
                                  nullptr,
                                  0,
                                  bytes_,
                                  VK_BUFFER_USAGE_TRANSFER_SRC_BIT |
                                      VK_BUFFER_USAGE_TRANSFER_DST_BIT |
                                      VK_BUFFER_USAGE_STORAGE_BUFFER_BIT,
                                  VK_SHARING_MODE_EXCLUSIVE,
                                  0,
                                  nullptr};
    const VkDevice device = context_->handle();
    STOKE_VK_CHECK(vkCreateBuffer(device, &info, nullptr, &handle_));
    try {
      VkMemoryRequirements needs{};
      vkGetBufferMemoryRequirements(device, handle_, &needs);
      const bool staging = kind == MemoryKind::staging;
      const std::uint32_t type = context_->logical_device()->memory_type(
          needs.memoryTypeBits,
          staging ? VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT : 0,
          staging ? 0 : VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT);
      memory_ = DeviceMemory(device, type, needs.size, staging);
      STOKE_VK_CHECK(vkBindBufferMemory(device, handle_, memory_.handle(), 0));
    } catch (...) {
      vkDestroyBuffer(device, handle_, nullptr);
      throw;
    }
  }
  Buffer(Buffer&& other) noexcept { *this = std::move(other); }
  Buffer& operator=(Buffer&& other) noexcept {
    if (this != &other) {
      release();
      context_ = std::move(other.context_);
      device_ = other.device_;
      size_ = std::exchange(other.size_, 0);
      bytes_ = std::exchange(other.bytes_, 0);
      reusable_ = other.reusable_;
      handle_ = std::exchange(other.handle_, VK_NULL_HANDLE);
      memory_ = std::move(other.memory_);
      written_ = std::exchange(other.written_, 0);
      used_ = std::exchange(other.used_, 0);
    }
    return *this;
  }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  ~Buffer() { release(); }

  /// Size in bytes.
  [[nodiscard]] std::size_t size() const noexcept { return size_; }
  /// The device it lives on.
  [[nodiscard]] const Device& device() const noexcept { return device_; }
  /// The buffer handle (null for an empty buffer).
  [[nodiscard]] VkBuffer handle() const noexcept { return handle_; }
  /// Whether this is an empty (default-constructed or moved-from) buffer.
  [[nodiscard]] bool empty() const noexcept { return handle_ == VK_NULL_HANDLE; }
  /// The context of its device.
  [[nodiscard]] const std::shared_ptr<Context>& context() const noexcept { return context_; }
  /// Its bytes in host memory, for a staging buffer (empty otherwise).
  [[nodiscard]] std::span<std::byte> mapped() const noexcept {
    return memory_.mapped() == nullptr ? std::span<std::byte>{}
                                       : std::span<std::byte>(memory_.mapped(), size_);
  }

  /// The fence of the last write submitted to it: readers wait on it.
  [[nodiscard]] Fence written() const { return context_ ? context_->fence(written_) : Fence{}; }
  /// The fence of the last submitted work that reads or writes it.
  [[nodiscard]] Fence used() const { return context_ ? context_->fence(used_) : Fence{}; }
  /// Records submitted work that writes the buffer and completes at `fence`.
  void mark_written(const Fence& fence) {
    check_own(fence);
    written_ = std::max(written_, fence.value());
    used_ = std::max(used_, fence.value());
  }
  /// Records submitted work that reads the buffer and completes at `fence`. A read does not
  /// change the buffer, so a const buffer (a batch's inputs) records it too.
  void mark_used(const Fence& fence) const {
    check_own(fence);
    used_ = std::max(used_, fence.value());
  }

 private:
  void check_own(const Fence& fence) const {
    if (!context_ || fence.semaphore() != context_->timeline()) {
      throw UsageError(
          "stoke: vulkan: a buffer's work must be a submission on its "
          "own device's queue");
    }
  }

  void release() noexcept {
    if (handle_ == VK_NULL_HANDLE) return;
    context_->retire(std::exchange(handle_, VK_NULL_HANDLE), memory_.release(), used_,
                     reusable_ ? bytes_ : 0);
    context_.reset();
  }

  std::shared_ptr<Context> context_;
  Device device_{};
  std::size_t size_ = 0;
  VkDeviceSize bytes_ = 0;  ///< allocated size: `size_` rounded up to whole words
  bool reusable_ = false;   ///< device memory, kept by the context for reuse when dropped
  VkBuffer handle_ = VK_NULL_HANDLE;
  DeviceMemory memory_;
  std::uint64_t written_ = 0;       ///< timeline value of the last write
  mutable std::uint64_t used_ = 0;  ///< timeline value of the last use
};

}  // namespace stoke::vulkan

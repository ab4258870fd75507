#pragma once
/// @file
/// `vulkan::Stager`: uploads host bytes to one device through a bounded pool of recycled
/// staging buffers; every copy is a queue submission fenced by the timeline semaphore.

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <vulkan/vulkan_core.h>

#include <stoke/core/device.hpp>
#include <stoke/core/staging.hpp>
#include <stoke/vulkan/buffer.hpp>
#include <stoke/vulkan/context.hpp>
#include <stoke/vulkan/device.hpp>
#include <stoke/vulkan/fence.hpp>

namespace stoke::vulkan {

namespace detail {
/// Fills staging memory with a copy of `bytes`.
struct CopyBytes {
  std::span<const std::byte> bytes;
  void operator()(std::span<std::byte> staging) const {
    if (!bytes.empty()) std::memcpy(staging.data(), bytes.data(), bytes.size());
  }
};
}  // namespace detail

/// Copies host bytes to a device and back. Models the stager of `stoke::StagingBackend`:
/// an upload fills a free staging buffer (host-visible memory), submits a copy from it into
/// device memory, and returns at once with the copy's fence. A staging buffer is reused only
/// after the fence of its last copy has signalled; with all `capacity()` buffers in flight an
/// upload waits for the oldest one. Thread-safe.
class Stager {
 public:
  /// A stager for `context`'s device with at most `slots` (at least 1) staging buffers.
  Stager(std::shared_ptr<Context> context, std::size_t slots)
      : context_(std::move(context)), slots_(slots) {
    if (slots == 0) throw std::invalid_argument("stoke: vulkan: a stager needs a staging slot");
  }
  Stager(const Stager&) = delete;
  Stager& operator=(const Stager&) = delete;
  /// Staging buffers still read by a copy are freed by their context when it completes.
  ~Stager() = default;

  /// The device it uploads to.
  [[nodiscard]] const Device& device() const noexcept { return context_->device(); }
  /// The most staging buffers it will hold.
  [[nodiscard]] std::size_t capacity() const noexcept { return slots_.size(); }
  /// The staging buffers allocated now (at most `capacity()`).
  [[nodiscard]] std::size_t staging_buffers() const {
    std::lock_guard lock(mutex_);
    return allocated_;
  }

  /// Starts copying `bytes` into a new device buffer, after the fences in `after` (of this
  /// device); returns the buffer and the copy's fence without waiting for it.
  Staged<Buffer, Fence> upload(std::span<const std::byte> bytes,
                               std::span<const Fence> after = {}) {
    return upload_with(bytes.size(), detail::CopyBytes{bytes}, after);
  }

  /// Like `upload`, but `fill(staging)` writes the `size` bytes straight into the staging
  /// memory (gathering scattered samples without an extra host copy).
  template <class Fill>
  Staged<Buffer, Fence> upload_with(std::size_t size, Fill&& fill,
                                    std::span<const Fence> after = {}) {
    Buffer target(context_, size);
    Fence fence = write(target, size, fill, after);
    return Staged<Buffer, Fence>{std::move(target), std::move(fence)};
  }

  /// Starts overwriting the start of `target` with `bytes`, after `after` and after all
  /// earlier work on `target`; returns the copy's fence.
  Fence upload_into(Buffer& target, std::span<const std::byte> bytes,
                    std::span<const Fence> after = {}) {
    detail::CopyBytes fill{bytes};
    return write(target, bytes.size(), fill, after);
  }

  /// The bytes of `buffer` (of this device), once the writes submitted to it completed.
  [[nodiscard]] std::vector<std::byte> download(const Buffer& buffer) {
    check_device(buffer);
    const std::size_t size = buffer.size();
    const std::size_t index = claim(size);
    Slot& slot = slots_[index];
    try {
      const Fence written = buffer.written();
      const Fence fence = context_->submit(
          [&](VkCommandBuffer commands) {
            if (size == 0) return;
            const VkBufferCopy region{0, 0, size};
            vkCmdCopyBuffer(commands, buffer.handle(), slot.buffer.handle(), 1, &region);
            const VkBufferMemoryBarrier barrier{VK_STRUCTURE_TYPE_BUFFER_MEMORY_BARRIER,
                                                nullptr,
                                                VK_ACCESS_TRANSFER_WRITE_BIT,
                                                VK_ACCESS_HOST_READ_BIT,
                                                VK_QUEUE_FAMILY_IGNORED,
                                                VK_QUEUE_FAMILY_IGNORED,
                                                slot.buffer.handle(),
                                                0,
                                                VK_WHOLE_SIZE};
            vkCmdPipelineBarrier(commands, VK_PIPELINE_STAGE_TRANSFER_BIT,
                                 VK_PIPELINE_STAGE_HOST_BIT, 0, 0, nullptr, 1, &barrier, 0,
                                 nullptr);
          },
          std::span(&written, 1));
      slot.buffer.mark_used(fence);
      fence.wait();
      std::vector<std::byte> out(size);
      if (size > 0) std::memcpy(out.data(), slot.buffer.mapped().data(), size);
      unclaim(index, fence.value());
      return out;
    } catch (...) {
      unclaim(index, slot.buffer.used().value());
      throw;
    }
  }

 private:
  struct Slot {
    Buffer buffer;
    std::uint64_t busy_until = 0;  ///< timeline value of the last copy that reads or writes it
    bool allocated = false;
    bool claimed = false;
  };

  void check_device(const Buffer& buffer) const {
    if (buffer.context() != context_) {
      throw std::invalid_argument("stoke: vulkan: the stager of " + device_name(device()) +
                                  " got a buffer of " + device_name(buffer.device()));
    }
  }

  /// Fills a staging buffer with `fill`, then submits its copy into `target`.
  template <class Fill>
  Fence write(Buffer& target, std::size_t size, Fill& fill, std::span<const Fence> after) {
    check_device(target);
    if (size > target.size()) {
      throw std::invalid_argument("stoke: vulkan: " + std::to_string(size) +
                                  " bytes do not fit a buffer of " + std::to_string(target.size()));
    }
    const std::size_t index = claim(size);
    Slot& slot = slots_[index];
    try {
      fill(slot.buffer.mapped().first(size));
      std::vector<Fence> waits(after.begin(), after.end());
      waits.push_back(target.used());  // overwrite only after the buffer's earlier work
      const Fence fence = context_->submit(
          [&](VkCommandBuffer commands) {
            if (size == 0) return;
            const VkBufferCopy region{0, 0, size};
            vkCmdCopyBuffer(commands, slot.buffer.handle(), target.handle(), 1, &region);
          },
          waits);
      slot.buffer.mark_used(fence);
      target.mark_written(fence);
      unclaim(index, fence.value());
      return fence;
    } catch (...) {
      unclaim(index, slot.buffer.used().value());
      throw;
    }
  }

  /// Claims a staging slot of at least `size` bytes whose last copy has completed: a free
  /// one, else a new one while fewer than `capacity()` exist, else the one busy the shortest
  /// (waiting for its fence). Blocks while every slot is being filled by another thread.
  std::size_t claim(std::size_t size) {
    std::unique_lock lock(mutex_);
    for (;;) {
      const std::uint64_t completed = context_->completed();
      std::optional<std::size_t> ready;
      std::optional<std::size_t> fresh;
      std::optional<std::size_t> oldest;
      for (std::size_t i = 0; i < slots_.size(); ++i) {
        const Slot& slot = slots_[i];
        if (slot.claimed) continue;
        if (!slot.allocated) {
          if (!fresh) fresh = i;
        } else if (slot.busy_until <= completed) {
          if (!ready || (slot.buffer.size() >= size && slots_[*ready].buffer.size() < size)) {
            ready = i;
          }
        } else if (!oldest || slot.busy_until < slots_[*oldest].busy_until) {
          oldest = i;
        }
      }
      const std::optional<std::size_t> pick = ready ? ready : fresh ? fresh : oldest;
      if (!pick) {
        released_.wait(lock);
        continue;
      }
      Slot& slot = slots_[*pick];
      slot.claimed = true;
      const bool make = !slot.allocated;
      if (make) {
        slot.allocated = true;
        ++allocated_;
      }
      const std::uint64_t busy_until = slot.busy_until;
      lock.unlock();
      try {
        if (busy_until > completed) context_->fence(busy_until).wait();
        if (make || slot.buffer.size() < size) {
          slot.buffer = Buffer();  // its copies have completed: freed at once
          slot.buffer = Buffer(context_, size, MemoryKind::staging);
        }
      } catch (...) {
        lock.lock();
        if (slot.buffer.empty() && slot.allocated) {
          slot.allocated = false;
          --allocated_;
        }
        slot.claimed = false;
        lock.unlock();
        released_.notify_all();
        throw;
      }
      return *pick;
    }
  }

  /// Hands slot `index` back; it is busy until the timeline reaches `busy_until`.
  void unclaim(std::size_t index, std::uint64_t busy_until) {
    {
      std::lock_guard lock(mutex_);
      slots_[index].busy_until = busy_until;
      slots_[index].claimed = false;
    }
    released_.notify_all();
  }

  std::shared_ptr<Context> context_;
  mutable std::mutex mutex_;
  std::condition_variable released_;
  std::vector<Slot> slots_;  ///< fixed size: `capacity()`
  std::size_t allocated_ = 0;
};

}  // namespace stoke::vulkan

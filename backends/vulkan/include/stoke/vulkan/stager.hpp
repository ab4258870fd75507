#pragma once
/// @file
/// `vulkan::Stager`: uploads host bytes to one device through a bounded pool of recycled
/// staging buffers; every copy is a queue submission fenced by the timeline semaphore.

#include <atomic>
#include <cstddef>
#include <cstring>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include <vulkan/vulkan_core.h>

#include <stoke/core/device.hpp>
#include <stoke/core/error.hpp>
#include <stoke/core/host_memory.hpp>
#include <stoke/core/lent_staging.hpp>
#include <stoke/core/staging.hpp>
#include <stoke/core/staging_slots.hpp>
#include <stoke/vulkan/buffer.hpp>
#include <stoke/vulkan/context.hpp>
#include <stoke/vulkan/device.hpp>
#include <stoke/vulkan/fence.hpp>
#include <stoke/vulkan/staged_copies.hpp>

namespace stoke::vulkan {

namespace detail {
/// Fills staging memory with a copy of `bytes`.
struct CopyBytes {
  std::span<const std::byte> bytes;  ///< the bytes to copy
  /// Copies `bytes` to the start of `staging`.
  void operator()(std::span<std::byte> staging) const {
    if (!bytes.empty()) std::memcpy(staging.data(), bytes.data(), bytes.size());
  }
};

/// Makes the staging buffers of a stager: host-visible buffers on its context's device.
struct StagingMemory {
  std::shared_ptr<Context> context;  ///< the device's context
  /// A staging buffer of `size` bytes.
  [[nodiscard]] Buffer allocate(std::size_t size) const {
    return Buffer(context, size, MemoryKind::staging);
  }
  /// The bytes of `buffer`.
  [[nodiscard]] static std::size_t size(const Buffer& buffer) noexcept { return buffer.size(); }
  /// The host view of `buffer`'s bytes.
  [[nodiscard]] static std::span<std::byte> mapped(const Buffer& buffer) noexcept {
    return buffer.mapped();
  }
};
}  // namespace detail

/// Copies host bytes to a device and back. Models the stager of `stoke::StagingBackend`:
/// bytes that lie in the host-visible memory it lends (`lent_memory()`, which a loader's
/// buffer pool writes batches into) are copied to device memory by the queue alone; other
/// bytes first fill a free staging buffer. Either way the upload returns at once with the
/// copy's fence. A staging buffer (lent or not) is written again only after the fence of its
/// last copy has signalled; with all `capacity()` staging buffers in flight an upload of
/// bytes from elsewhere waits for the oldest one. Thread-safe.
class Stager {
 public:
  /// A stager for `context`'s device with at most `slots` (at least 1) staging buffers.
  Stager(std::shared_ptr<Context> context, std::size_t slots)
      : context_(std::move(context)),
        slots_(slots, detail::StagingMemory{context_}),
        lent_(std::make_shared<Lent>(detail::StagingMemory{context_}, "host-visible")) {}
  Stager(const Stager&) = delete;
  Stager& operator=(const Stager&) = delete;
  /// Staging buffers still read by a copy are freed by their context when it completes.
  ~Stager() = default;

  /// The device it uploads to.
  [[nodiscard]] const Device& device() const noexcept { return context_->device(); }
  /// The most staging buffers it will hold.
  [[nodiscard]] std::size_t capacity() const noexcept { return slots_.capacity(); }
  /// The staging buffers allocated now (at most `capacity()`).
  [[nodiscard]] std::size_t staging_buffers() const { return slots_.allocated(); }

  /// The host-visible memory this stager lends to host batch storage: bytes `upload` finds
  /// there are copied by the queue alone, with no host copy.
  [[nodiscard]] std::shared_ptr<HostMemory> lent_memory() const noexcept { return lent_; }
  /// Blocks of lent memory made so far.
  [[nodiscard]] std::size_t lent_allocations() const { return lent_->allocations(); }
  /// Uploads that first copied their bytes on the host (they did not lie in lent memory).
  [[nodiscard]] std::size_t host_copies() const noexcept { return host_copies_.load(); }

  /// Starts copying `bytes` into a new device buffer, after the fences in `after` (of this
  /// device); returns the buffer and the copy's fence without waiting for it. Bytes in lent
  /// memory are copied from there; others go through a staging buffer.
  Staged<Buffer, Fence> upload(std::span<const std::byte> bytes,
                               std::span<const Fence> after = {}) {
    if (const auto where = lent_->find(bytes)) {
      Buffer target(context_, bytes.size());
      const Fence fence = copy(*where->memory, where->offset, target, bytes.size(), after);
      lent_->record_use(*where, fence);
      return Staged<Buffer, Fence>{std::move(target), fence};
    }
    host_copies_.fetch_add(1, std::memory_order_relaxed);
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
    auto slot = slots_.claim(size);
    Buffer& staging = slot.memory();
    const Fence fence = detail::submit_copy_to_host(*context_, buffer, staging, size);
    slot.busy_until(fence);
    fence.wait();
    std::vector<std::byte> out(size);
    if (size > 0) std::memcpy(out.data(), staging.mapped().data(), size);
    return out;
  }

 private:
  /// The staging buffers, recycled once their copies' fences have signalled.
  using Slots = stoke::StagingSlots<Buffer, Fence, detail::StagingMemory>;

  /// Throws `UsageError` unless `buffer` lives on this stager's device context.
  void check_device(const Buffer& buffer) const {
    if (buffer.context() != context_) {
      throw UsageError("stoke: vulkan: the stager of " + device_name(device()) +
                       " got a buffer of " + device_name(buffer.device()));
    }
  }

  /// Fills a staging buffer with `fill`, then submits its copy into `target`.
  template <class Fill>
  Fence write(Buffer& target, std::size_t size, Fill& fill, std::span<const Fence> after) {
    check_device(target);
    if (size > target.size()) {
      throw UsageError("stoke: vulkan: " + std::to_string(size) + " bytes do not fit a buffer of " +
                       std::to_string(target.size()));
    }
    auto slot = slots_.claim(size);
    Buffer& staging = slot.memory();
    fill(staging.mapped().first(size));
    const Fence fence = copy(staging, 0, target, size, after);
    slot.busy_until(fence);
    return fence;
  }

  /// Submits the copy of `size` bytes from `offset` in `staging` to the start of `target`,
  /// after `after` and after the earlier work on `target`; returns its fence.
  Fence copy(const Buffer& staging, std::size_t offset, Buffer& target, std::size_t size,
             std::span<const Fence> after) {
    std::vector<Fence> waits(after.begin(), after.end());
    waits.push_back(target.used());  // overwrite only after the buffer's earlier work
    const Fence fence = context_->submit(
        [&](VkCommandBuffer commands) {
          if (size == 0) return;
          const VkBufferCopy region{offset, 0, size};
          vkCmdCopyBuffer(commands, staging.handle(), target.handle(), 1, &region);
        },
        waits);
    staging.mark_used(fence);
    target.mark_written(fence);
    return fence;
  }

  /// The host-visible memory lent to batch storage.
  using Lent = stoke::LentStaging<Buffer, Fence, detail::StagingMemory>;

  std::shared_ptr<Context> context_;
  Slots slots_;
  std::shared_ptr<Lent> lent_;
  std::atomic<std::size_t> host_copies_{0};
};

}  // namespace stoke::vulkan

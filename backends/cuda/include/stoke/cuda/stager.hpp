#pragma once
/// @file
/// `cuda::Stager`: uploads host bytes to one device through a bounded pool of recycled pinned
/// staging buffers; every copy runs on the device's copy stream and is fenced by an event.

#include <condition_variable>
#include <cstddef>
#include <cstring>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <cuda_runtime_api.h>

#include <stoke/core/device.hpp>
#include <stoke/core/staging.hpp>
#include <stoke/cuda/buffer.hpp>
#include <stoke/cuda/device.hpp>
#include <stoke/cuda/error.hpp>
#include <stoke/cuda/fence.hpp>
#include <stoke/cuda/runtime.hpp>

namespace stoke::cuda {

/// Page-locked host memory (`cudaMallocHost`), move-only.
class PinnedMemory {
 public:
  PinnedMemory() = default;
  /// `size` pinned bytes.
  explicit PinnedMemory(std::size_t size) : size_(size) {
    if (size_ > 0) STOKE_CUDA_CHECK(cudaMallocHost(&data_, size_));
  }
  PinnedMemory(PinnedMemory&& other) noexcept
      : data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)) {}
  PinnedMemory& operator=(PinnedMemory&& other) noexcept {
    std::swap(data_, other.data_);
    std::swap(size_, other.size_);
    return *this;
  }
  ~PinnedMemory() {
    if (data_ != nullptr) STOKE_CUDA_LOG(cudaFreeHost(data_));
  }
  /// The bytes.
  [[nodiscard]] std::span<std::byte> bytes() const noexcept {
    return {static_cast<std::byte*>(data_), size_};
  }

 private:
  void* data_ = nullptr;
  std::size_t size_ = 0;
};

/// Copies host bytes to a device and back. Models the stager of `stoke::StagingBackend`: an
/// upload fills a free pinned staging buffer, queues the copy into a new device buffer on the
/// device's copy stream, and returns at once with the copy's fence. A staging buffer is
/// refilled only after the fence of its last copy has signalled; with all `capacity()` of
/// them in flight an upload waits for the oldest. Thread-safe.
class Stager {
 public:
  /// A stager for `device` with at most `slots` (at least 1) staging buffers.
  Stager(const Device& device, std::size_t slots)
      : context_(detail::DeviceContext::of(device)), slots_(slots) {
    if (slots == 0) throw std::invalid_argument("stoke: cuda: a stager needs a staging slot");
  }
  Stager(const Stager&) = delete;
  Stager& operator=(const Stager&) = delete;
  /// Waits for the copies that still read its staging buffers, then frees them.
  ~Stager() {
    for (Slot& slot : slots_) {
      try {
        slot.busy.wait();
      } catch (const Error&) {  // a failed copy no longer reads the memory
      }
    }
  }

  /// The device it uploads to.
  [[nodiscard]] const Device& device() const noexcept { return context_->device(); }
  /// The most staging buffers it will hold.
  [[nodiscard]] std::size_t capacity() const noexcept { return slots_.size(); }
  /// The staging buffers allocated now (at most `capacity()`).
  [[nodiscard]] std::size_t staging_buffers() const {
    std::lock_guard lock(mutex_);
    return allocated_;
  }
  /// The device's shared context (its copy stream).
  [[nodiscard]] const std::shared_ptr<detail::DeviceContext>& context() const noexcept {
    return context_;
  }

  /// Starts copying `bytes` into a new device buffer; returns it with the copy's fence,
  /// without waiting. `bytes` may be reused as soon as this returns.
  Staged<Buffer, Fence> upload(std::span<const std::byte> bytes) {
    return upload_with(bytes.size(), [&](std::span<std::byte> staging) {
      if (!bytes.empty()) std::memcpy(staging.data(), bytes.data(), bytes.size());
    });
  }

  /// Like `upload`, but `fill(staging)` writes the `size` bytes straight into the pinned
  /// staging memory (gathering scattered samples without an extra host copy).
  template <class Fill>
  Staged<Buffer, Fence> upload_with(std::size_t size, Fill&& fill) {
    const std::size_t index = claim(size);
    Slot& slot = slots_[index];
    try {
      fill(slot.memory.bytes().first(size));
      const DeviceGuard guard(device());
      Buffer target(context_, size);
      if (size > 0) {
        STOKE_CUDA_CHECK(cudaMemcpyAsync(target.data(), slot.memory.bytes().data(), size,
                                         cudaMemcpyHostToDevice, context_->copy_stream()));
      }
      Fence fence(device(), context_->copy_stream());
      target.mark_written(fence);
      unclaim(index, fence);
      return Staged<Buffer, Fence>{std::move(target), std::move(fence)};
    } catch (...) {
      unclaim(index, slot.busy);
      throw;
    }
  }

  /// The bytes of `buffer` (of this device), once the writes queued on it completed.
  [[nodiscard]] std::vector<std::byte> download(const Buffer& buffer) {
    if (buffer.data() != nullptr && !(buffer.device() == device())) {
      throw std::invalid_argument("stoke: cuda: the stager of " + device_name(device()) +
                                  " got a buffer of " + device_name(buffer.device()));
    }
    const std::size_t size = buffer.size();
    std::vector<std::byte> out(size);
    if (size == 0) return out;
    const std::size_t index = claim(size);
    Slot& slot = slots_[index];
    try {
      const DeviceGuard guard(device());
      buffer.written().enqueue_wait(context_->copy_stream());
      STOKE_CUDA_CHECK(cudaMemcpyAsync(slot.memory.bytes().data(), buffer.data(), size,
                                       cudaMemcpyDeviceToHost, context_->copy_stream()));
      const Fence fence(device(), context_->copy_stream());
      fence.wait();
      std::memcpy(out.data(), slot.memory.bytes().data(), size);
      unclaim(index, fence);
      return out;
    } catch (...) {
      unclaim(index, slot.busy);
      throw;
    }
  }

 private:
  struct Slot {
    PinnedMemory memory;
    Fence busy;                ///< the last copy that reads or writes it
    std::size_t last_use = 0;  ///< when it was last handed back (to find the oldest)
    bool allocated = false;
    bool claimed = false;
  };

  /// Claims a staging slot of at least `size` bytes whose last copy has completed: a ready
  /// one, else a new one while fewer than `capacity()` exist, else the oldest busy one
  /// (waiting for its fence). Blocks while every slot is being filled by another thread.
  std::size_t claim(std::size_t size) {
    std::unique_lock lock(mutex_);
    for (;;) {
      std::optional<std::size_t> ready, fresh, oldest;
      for (std::size_t i = 0; i < slots_.size(); ++i) {
        const Slot& slot = slots_[i];
        if (slot.claimed) continue;
        if (!slot.allocated) {
          if (!fresh) fresh = i;
        } else if (slot.busy.ready()) {
          if (!ready ||
              (slot.memory.bytes().size() >= size && slots_[*ready].memory.bytes().size() < size)) {
            ready = i;
          }
        } else if (!oldest || slot.last_use < slots_[*oldest].last_use) {
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
      if (!slot.allocated) {
        slot.allocated = true;
        ++allocated_;
      }
      const Fence busy = slot.busy;
      lock.unlock();
      try {
        busy.wait();
        if (slot.memory.bytes().size() < size) {
          slot.memory = PinnedMemory();  // its copies have completed
          slot.memory = PinnedMemory(size);
        }
      } catch (...) {
        lock.lock();
        if (slot.memory.bytes().empty()) {
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

  /// Hands slot `index` back; it is busy until `busy` signals.
  void unclaim(std::size_t index, Fence busy) {
    {
      std::lock_guard lock(mutex_);
      slots_[index].busy = std::move(busy);
      slots_[index].claimed = false;
      slots_[index].last_use = ++uses_;
    }
    released_.notify_all();
  }

  std::shared_ptr<detail::DeviceContext> context_;
  mutable std::mutex mutex_;
  std::condition_variable released_;
  std::vector<Slot> slots_;  ///< fixed size: `capacity()`
  std::size_t allocated_ = 0;
  std::size_t uses_ = 0;
};

}  // namespace stoke::cuda

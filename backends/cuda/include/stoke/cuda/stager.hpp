#pragma once
/// @file
/// `cuda::Stager`: uploads host bytes to one device through a bounded pool of recycled pinned
/// staging buffers; every copy runs on the device's copy stream and is fenced by an event.

#include <atomic>
#include <cstddef>
#include <cstring>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include <cuda_runtime_api.h>

#include <stoke/core/device.hpp>
#include <stoke/core/error.hpp>
#include <stoke/core/host_memory.hpp>
#include <stoke/core/lent_staging.hpp>
#include <stoke/core/staging.hpp>
#include <stoke/core/staging_slots.hpp>
#include <stoke/cuda/buffer.hpp>
#include <stoke/cuda/device.hpp>
#include <stoke/cuda/error.hpp>
#include <stoke/cuda/fault_injection.hpp>
#include <stoke/cuda/fence.hpp>
#include <stoke/cuda/runtime.hpp>

namespace stoke::cuda {

/// Page-locked host memory (`cudaMallocHost`), move-only.
class PinnedMemory {
 public:
  /// No memory.
  PinnedMemory() = default;
  /// `size` pinned bytes.
  explicit PinnedMemory(std::size_t size) : size_(size) {
    if (size_ > 0) STOKE_CUDA_CHECK(cudaMallocHost(&data_, size_));
  }
  /// Takes `other`'s memory, leaving it empty.
  PinnedMemory(PinnedMemory&& other) noexcept
      : data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)) {}
  /// Swaps memory with `other`, which frees what this held when it is destroyed.
  PinnedMemory& operator=(PinnedMemory&& other) noexcept {
    std::swap(data_, other.data_);
    std::swap(size_, other.size_);
    return *this;
  }
  /// Frees the memory.
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

namespace detail {
/// Makes the staging buffers of a stager: pinned host memory.
struct PinnedStaging {
  /// `size` pinned bytes.
  [[nodiscard]] static PinnedMemory allocate(std::size_t size) { return PinnedMemory(size); }
  /// The bytes of `memory`.
  [[nodiscard]] static std::size_t size(const PinnedMemory& memory) noexcept {
    return memory.bytes().size();
  }
  /// The host view of `memory`.
  [[nodiscard]] static std::span<std::byte> mapped(const PinnedMemory& memory) noexcept {
    return memory.bytes();
  }
};

/// Makes the pinned memory a stager lends to host batch storage, with `device` current, so
/// that a loader's worker thread never touches another device's context.
struct LentPinned : PinnedStaging {
  Device device;  ///< the stager's device
  /// `size` pinned bytes, allocated with `device` current.
  [[nodiscard]] PinnedMemory allocate(std::size_t size) const {
    const DeviceGuard guard(device);
    return PinnedMemory(size);
  }
};
}  // namespace detail

/// Copies host bytes to a device and back. Models the stager of `stoke::StagingBackend`:
/// bytes that lie in the pinned memory it lends (`lent_memory()`, which a loader's buffer
/// pool writes batches into) are copied by the DMA engine alone; other bytes first fill a
/// free pinned staging buffer. Either way the copy into a new device buffer is queued on the
/// device's copy stream and the upload returns at once with the copy's fence. Pinned memory
/// (lent or not) is written again only after the fence of its last copy has signalled; with
/// all `capacity()` staging buffers in flight an upload of bytes from elsewhere waits for
/// the oldest. Thread-safe.
class Stager {
 public:
  /// A stager for `device` with at most `slots` (at least 1) staging buffers.
  Stager(const Device& device, std::size_t slots)
      : context_(detail::DeviceContext::of(device)),
        slots_(slots, detail::PinnedStaging{}),
        lent_(shared_lent_memory(device)) {}
  Stager(const Stager&) = delete;
  Stager& operator=(const Stager&) = delete;
  /// Waits for the copies that still read its staging buffers, then frees them.
  ~Stager() { slots_.wait_idle(); }

  /// The device it uploads to.
  [[nodiscard]] const Device& device() const noexcept { return context_->device(); }
  /// The most staging buffers it will hold.
  [[nodiscard]] std::size_t capacity() const noexcept { return slots_.capacity(); }
  /// The staging buffers allocated now (at most `capacity()`).
  [[nodiscard]] std::size_t staging_buffers() const { return slots_.allocated(); }
  /// The device's shared context (its copy stream).
  [[nodiscard]] const std::shared_ptr<detail::DeviceContext>& context() const noexcept {
    return context_;
  }

  /// Allocates every staging buffer now, each of at least `bytes` (cudaMallocHost
  /// synchronises the device, so do it before training rather than while kernels and
  /// collectives are in flight).
  void reserve(std::size_t bytes) {
    const DeviceGuard guard(device());
    slots_.reserve(bytes);
  }

  /// The pinned memory this stager lends to host batch storage: bytes `upload` finds there
  /// are copied by the DMA engine alone, with no host copy. Pinned memory serves every
  /// device, so all stagers of the process share it (a batcher's pool lent to one device's
  /// stager feeds the others without a copy too).
  [[nodiscard]] std::shared_ptr<HostMemory> lent_memory() const noexcept { return lent_; }
  /// Blocks of lent memory made so far.
  [[nodiscard]] std::size_t lent_allocations() const { return lent_->allocations(); }
  /// Uploads that first copied their bytes on the host (they did not lie in lent memory).
  [[nodiscard]] std::size_t host_copies() const noexcept { return host_copies_.load(); }

  /// Starts copying `bytes` into a new device buffer; returns it with the copy's fence,
  /// without waiting. Bytes in lent memory are copied from there and must stay as they are
  /// until the fence (the lending pool sees to it); others may be reused at once.
  Staged<Buffer, Fence> upload(std::span<const std::byte> bytes) {
    if (const auto where = lent_->find(bytes)) {
      const DeviceGuard guard(device());
      Buffer target(context_, bytes.size());
      STOKE_CUDA_CHECK(cudaMemcpyAsync(target.data(), bytes.data(), bytes.size(),
                                       cudaMemcpyHostToDevice, context_->copy_stream()));
      const Fence fence(device(), context_->copy_stream());
      lent_->record_use(*where, fence);
      Fence done = reported(fence);
      target.mark_written(done);
      return Staged<Buffer, Fence>{std::move(target), std::move(done)};
    }
    host_copies_.fetch_add(1, std::memory_order_relaxed);
    return upload_with(bytes.size(), [&](std::span<std::byte> staging) {
      if (!bytes.empty()) std::memcpy(staging.data(), bytes.data(), bytes.size());
    });
  }

  /// Like `upload`, but `fill(staging)` writes the `size` bytes straight into the pinned
  /// staging memory (gathering scattered samples without an extra host copy).
  template <class Fill>
  Staged<Buffer, Fence> upload_with(std::size_t size, Fill&& fill) {
    // The guard comes first: a staging buffer made by the claim (cudaMallocHost) belongs to
    // this device's context, never to whichever device the thread had current.
    const DeviceGuard guard(device());
    auto slot = slots_.claim(size);
    PinnedMemory& staging = slot.memory();
    fill(staging.bytes().first(size));
    Buffer target(context_, size);
    if (size > 0) {
      STOKE_CUDA_CHECK(cudaMemcpyAsync(target.data(), staging.bytes().data(), size,
                                       cudaMemcpyHostToDevice, context_->copy_stream()));
    }
    const Fence fence(device(), context_->copy_stream());
    slot.busy_until(fence);
    Fence done = reported(fence);
    target.mark_written(done);
    return Staged<Buffer, Fence>{std::move(target), std::move(done)};
  }

  /// Overwrites the start of `target` (a buffer of this device) with `bytes`, after the work
  /// queued on `target` before; returns the copy's fence without waiting. `bytes` may be
  /// reused as soon as this returns. Throws `UsageError` when they do not fit.
  Fence upload_into(Buffer& target, std::span<const std::byte> bytes) {
    check_own(target);
    if (bytes.size() > target.size()) {
      throw UsageError("stoke: cuda: an upload of " + std::to_string(bytes.size()) +
                       " bytes into a buffer of " + std::to_string(target.size()));
    }
    if (bytes.empty()) return target.written();
    const DeviceGuard guard(device());
    auto slot = slots_.claim(bytes.size());
    PinnedMemory& staging = slot.memory();
    std::memcpy(staging.bytes().data(), bytes.data(), bytes.size());
    target.enqueue_wait_for_uses(context_->copy_stream());
    STOKE_CUDA_CHECK(cudaMemcpyAsync(target.data(), staging.bytes().data(), bytes.size(),
                                     cudaMemcpyHostToDevice, context_->copy_stream()));
    const Fence fence(device(), context_->copy_stream());
    slot.busy_until(fence);
    Fence done = reported(fence);
    target.mark_written_after_uses(done);
    return done;
  }

  /// The bytes of `buffer` (of this device), once the writes queued on it completed.
  [[nodiscard]] std::vector<std::byte> download(const Buffer& buffer) {
    check_own(buffer);
    const std::size_t size = buffer.size();
    std::vector<std::byte> out(size);
    if (size == 0) return out;
    const DeviceGuard guard(device());
    auto slot = slots_.claim(size);
    PinnedMemory& staging = slot.memory();
    buffer.written().enqueue_wait(context_->copy_stream());
    STOKE_CUDA_CHECK(cudaMemcpyAsync(staging.bytes().data(), buffer.data(), size,
                                     cudaMemcpyDeviceToHost, context_->copy_stream()));
    const Fence fence(device(), context_->copy_stream());
    fence.wait();
    std::memcpy(out.data(), staging.bytes().data(), size);
    slot.busy_until(fence);
    return out;
  }

 private:
  /// The fence an upload reports for its copy's `fence`: `fence` itself, but for the copy that
  /// `testing::fail_copy` chose when the stager was made, which carries a failure naming it.
  /// The staging memory is recycled after `fence` either way.
  Fence reported(const Fence& fence) {
    if (fail_copy_ == detail::no_injected_failure) [[likely]] {
      return fence;
    }
    const std::size_t copy = copies_.fetch_add(1, std::memory_order_relaxed);
    if (copy != fail_copy_) return fence;
    return detail::failing(fence, DeviceError(Library::cuda, static_cast<int>(cudaErrorUnknown),
                                              "cudaMemcpyAsync (stoke::cuda::testing::fail_copy "
                                              "failed copy " +
                                                  std::to_string(copy) + " of the stager of " +
                                                  device_name(device()) + ")",
                                              "an injected fault"));
  }

  /// Throws `UsageError` unless `buffer` is empty or on this stager's device.
  void check_own(const Buffer& buffer) const {
    if (buffer.data() != nullptr && !(buffer.device() == device())) {
      throw UsageError("stoke: cuda: the stager of " + device_name(device()) + " got a buffer of " +
                       device_name(buffer.device()));
    }
  }

  /// The pinned memory lent to batch storage.
  using Lent = stoke::LentStaging<PinnedMemory, Fence, detail::LentPinned>;

  /// The process's lent pinned memory while any stager or pool holds it, else new memory
  /// allocated with `device` current.
  static std::shared_ptr<Lent> shared_lent_memory(const Device& device) {
    static std::mutex mutex;
    static std::weak_ptr<Lent> shared;
    const std::lock_guard lock(mutex);
    std::shared_ptr<Lent> lent = shared.lock();
    if (!lent) {
      lent = std::make_shared<Lent>(detail::LentPinned{{}, device}, "pinned");
      shared = lent;
    }
    return lent;
  }

  std::shared_ptr<detail::DeviceContext> context_;
  /// The pinned staging buffers, recycled once their copies' fences have signalled.
  stoke::StagingSlots<PinnedMemory, Fence, detail::PinnedStaging> slots_;
  std::shared_ptr<Lent> lent_;
  std::atomic<std::size_t> host_copies_{0};
  /// The copy to fail (`testing::fail_copy`), or `detail::no_injected_failure`.
  std::size_t fail_copy_ = detail::injected_copy_failure().load(std::memory_order_relaxed);
  std::atomic<std::size_t> copies_{0};  ///< uploads so far, counted only with `fail_copy_` set
};

namespace detail {
/// One stager per device, made on first use; shared by a batcher and its copies.
class StagerCache {
 public:
  /// Stagers of `slots` staging buffers each.
  explicit StagerCache(std::size_t slots) : slots_(slots) {}
  /// The stager of `device`.
  Stager& of(const Device& device) {
    std::lock_guard lock(mutex_);
    auto& stager = stagers_[device];
    if (!stager) stager = std::make_unique<Stager>(device, slots_);
    return *stager;
  }

 private:
  std::size_t slots_;
  std::mutex mutex_;
  std::unordered_map<Device, std::unique_ptr<Stager>> stagers_;
};
}  // namespace detail

}  // namespace stoke::cuda

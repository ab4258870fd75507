#pragma once
/// @file
/// `cuda::Buffer`: device memory from the device's stream-ordered pool (`cudaMallocAsync`),
/// freed with `cudaFreeAsync` after the work that writes it.

#include <cstddef>
#include <memory>
#include <span>
#include <utility>

#include <cuda_runtime_api.h>

#include <stoke/cuda/device.hpp>
#include <stoke/cuda/error.hpp>
#include <stoke/cuda/fence.hpp>
#include <stoke/cuda/runtime.hpp>

namespace stoke::cuda {

/// Bytes on one device (move-only), allocated on the device's copy stream from its default
/// memory pool. `written()` is the fence of the last write readers wait on. Dropping it frees
/// the memory in stream order after that write; work the user queued on other streams must
/// be complete (or fenced) before the buffer is dropped.
class Buffer {
 public:
  /// No buffer.
  Buffer() = default;
  /// `size` bytes on `context`'s device.
  Buffer(std::shared_ptr<detail::DeviceContext> context, std::size_t size)
      : context_(std::move(context)), size_(size) {
    if (size_ == 0) return;
    const DeviceGuard guard(context_->device());
    STOKE_CUDA_CHECK(cudaMallocAsync(&data_, size_, context_->copy_stream()));
  }
  /// `size` bytes on `device`.
  Buffer(const Device& device, std::size_t size)
      : Buffer(detail::DeviceContext::of(device), size) {}
  Buffer(Buffer&& other) noexcept { *this = std::move(other); }
  Buffer& operator=(Buffer&& other) noexcept {
    if (this != &other) {
      release();
      context_ = std::move(other.context_);
      data_ = std::exchange(other.data_, nullptr);
      size_ = std::exchange(other.size_, 0);
      written_ = std::move(other.written_);
    }
    return *this;
  }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  ~Buffer() { release(); }

  /// Size in bytes.
  [[nodiscard]] std::size_t size() const noexcept { return size_; }
  /// The device it lives on.
  [[nodiscard]] Device device() const noexcept { return context_ ? context_->device() : Device{}; }
  /// The device pointer (null when empty).
  [[nodiscard]] void* data() const noexcept { return data_; }
  /// The memory as device floats (for kernels, cuBLAS and the collective).
  [[nodiscard]] std::span<float> floats() const noexcept {
    return {static_cast<float*>(data_), size_ / sizeof(float)};
  }
  /// The context of its device.
  [[nodiscard]] const std::shared_ptr<detail::DeviceContext>& context() const noexcept {
    return context_;
  }
  /// The fence of the last write: readers wait on it.
  [[nodiscard]] const Fence& written() const noexcept { return written_; }
  /// Records queued work that writes the buffer and completes at `fence`.
  void mark_written(Fence fence) { written_ = std::move(fence); }

 private:
  void release() noexcept {
    if (data_ == nullptr) return;
    try {
      const DeviceGuard guard(context_->device());
      if (written_.event() != nullptr) {
        STOKE_CUDA_LOG(cudaStreamWaitEvent(context_->copy_stream(), written_.event(), 0));
      }
      STOKE_CUDA_LOG(cudaFreeAsync(data_, context_->copy_stream()));
    } catch (const Error&) {  // the device is gone: nothing left to free
    }
    data_ = nullptr;
    context_.reset();
  }

  std::shared_ptr<detail::DeviceContext> context_;
  void* data_ = nullptr;
  std::size_t size_ = 0;
  Fence written_;
};

}  // namespace stoke::cuda

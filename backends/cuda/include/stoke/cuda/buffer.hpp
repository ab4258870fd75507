#pragma once
/// @file
/// `cuda::Buffer`: device memory from the device's stream-ordered pool (`cudaMallocAsync`),
/// freed with `cudaFreeAsync` after the work that writes it.

#include <cstddef>
#include <memory>
#include <span>
#include <utility>
#include <vector>

#include <cuda_runtime_api.h>

#include <stoke/cuda/device.hpp>
#include <stoke/cuda/error.hpp>
#include <stoke/cuda/fence.hpp>
#include <stoke/cuda/runtime.hpp>

namespace stoke::cuda {

/// Bytes on one device (move-only), allocated on the device's copy stream from its default
/// memory pool. `written()` is the fence of the last write, which readers and later writers
/// wait on; a new buffer's is its allocation, so a first writer on another stream that waits
/// on it is ordered after the memory exists. Dropping the buffer frees the memory in stream
/// order after that write and after every use recorded with `record_use` (the way PyTorch's
/// `record_stream` works): a kernel on another stream that still reads the buffer when it is
/// dropped keeps its memory until it is done.
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
    written_ = Fence(context_->device(), context_->copy_stream());
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
      uses_ = std::move(other.uses_);
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
  /// Records queued work that writes the buffer, completes at `fence` and was queued after
  /// `enqueue_wait_for_uses`: it is ordered after every earlier use, so they are forgotten
  /// (whoever waits for it waits for them).
  void mark_written_after_uses(Fence fence) {
    written_ = std::move(fence);
    uses_.clear();
  }
  /// Records the work queued on `stream` so far as a use of the buffer (call it after queuing
  /// a kernel or copy that reads or writes it): the memory is freed only once that work is
  /// done, and later writers that call `enqueue_wait_for_uses` wait for it. A use does not
  /// change the bytes, so a const buffer records it too.
  void record_use(cudaStream_t stream) const {
    if (data_ != nullptr) record_use(Fence(context_->device(), stream));
  }
  /// Records queued work that uses the buffer and completes at `fence` (see above), a fence
  /// made after the work it records. One use is kept a stream: a later fence of a stream
  /// signals after its earlier ones, so it replaces them, and nothing is asked of the runtime.
  void record_use(Fence fence) const {
    if (data_ == nullptr || fence.event() == nullptr) return;
    for (Fence& use : uses_) {
      if (use.stream() == fence.stream()) {
        use = std::move(fence);
        return;
      }
    }
    uses_.push_back(std::move(fence));
  }
  /// Makes later work on `stream` wait for the last write and every recorded use: what work
  /// that overwrites the buffer must wait for (readers need only `written()`). Fences of
  /// `stream` itself queue nothing.
  void enqueue_wait_for_uses(cudaStream_t stream) const {
    written_.enqueue_wait(stream);
    for (const Fence& use : uses_) use.enqueue_wait(stream);
  }

 private:
  void release() noexcept {
    if (data_ == nullptr) return;
    try {
      const DeviceGuard guard(context_->device());
      const cudaStream_t frees = context_->copy_stream();
      const auto wait = [frees](const Fence& fence) {  // a fence of `frees` is ordered already
        if (fence.event() != nullptr && fence.stream() != frees) {
          STOKE_CUDA_LOG(cudaStreamWaitEvent(frees, fence.event(), 0));
        }
      };
      wait(written_);
      for (const Fence& use : uses_) wait(use);
      STOKE_CUDA_LOG(cudaFreeAsync(data_, context_->copy_stream()));
    } catch (const Error&) {  // the device is gone: nothing left to free
    }
    data_ = nullptr;
    uses_.clear();
    context_.reset();
  }

  std::shared_ptr<detail::DeviceContext> context_;
  void* data_ = nullptr;
  std::size_t size_ = 0;
  Fence written_;
  mutable std::vector<Fence>
      uses_;  ///< work the free and later writers must wait for, one a stream
};

}  // namespace stoke::cuda

#pragma once
/// @file
/// `cuda::Fence`: a recorded CUDA event; signals when the work queued before it is done.

#include <memory>
#include <utility>

#include <cuda_runtime_api.h>

#include <stoke/cuda/error.hpp>
#include <stoke/cuda/runtime.hpp>

namespace stoke::cuda {

class Fence;
namespace detail {
inline Fence failing(Fence fence, DeviceError error);
}  // namespace detail

/// Signals when the work recorded in a CUDA event has completed. Models `stoke::Fence`.
/// Copies share the event; a default fence has already signalled. A fence may carry a failure
/// of its own, reported once the event has signalled (`testing::fail_copy`'s, see
/// fault_injection.hpp); none costs a null test.
class Fence {
 public:
  /// A fence that has already signalled.
  Fence() = default;
  /// Records the work queued on `stream` (of `device`) so far.
  Fence(const Device& device, cudaStream_t stream)
      : event_(std::make_shared<Event>(device)), stream_(stream) {
    event_->record(stream);
  }

  /// Whether the work is complete, without blocking; throws `DeviceError` if it failed.
  [[nodiscard]] bool ready() const {
    if (!event_) return true;
    const cudaError_t status = cudaEventQuery(event_->handle());
    if (status == cudaErrorNotReady) return false;
    STOKE_CUDA_CHECK(status);
    throw_failure();
    return true;
  }
  /// Blocks until the work is complete; throws `DeviceError` if it failed.
  void wait() const {
    if (event_) STOKE_CUDA_CHECK(cudaEventSynchronize(event_->handle()));
    throw_failure();
  }
  /// Makes later work on `stream` wait for this fence (without blocking the host); throws
  /// instead if the fence carries a failure (the work it guards failed). Work recorded on
  /// `stream` itself is ordered already: nothing is queued then.
  void enqueue_wait(cudaStream_t stream) const {
    throw_failure();
    if (event_ && stream != stream_) {
      STOKE_CUDA_CHECK(cudaStreamWaitEvent(stream, event_->handle(), 0));
    }
  }
  /// The stream the event was recorded on, or null for a fence made signalled.
  [[nodiscard]] cudaStream_t stream() const noexcept { return stream_; }
  /// The event, or null for a fence made signalled.
  [[nodiscard]] cudaEvent_t event() const noexcept { return event_ ? event_->handle() : nullptr; }

 private:
  friend Fence detail::failing(Fence fence, DeviceError error);

  /// Throws the failure the fence carries, if any.
  void throw_failure() const {
    if (failure_) [[unlikely]] {
      throw *failure_;
    }
  }

  std::shared_ptr<Event> event_;
  cudaStream_t stream_ = nullptr;               ///< where the event was recorded
  std::shared_ptr<const DeviceError> failure_;  ///< a failure of its own, reported when signalled
};

namespace detail {
/// `fence`, reporting `error` once it has signalled: the fence of a copy that
/// `testing::fail_copy` fails.
inline Fence failing(Fence fence, DeviceError error) {
  fence.failure_ = std::make_shared<const DeviceError>(std::move(error));
  return fence;
}
}  // namespace detail

}  // namespace stoke::cuda

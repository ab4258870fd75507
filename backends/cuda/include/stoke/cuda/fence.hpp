#pragma once
/// @file
/// `cuda::Fence`: a recorded CUDA event; signals when the work queued before it is done.

#include <memory>
#include <utility>

#include <cuda_runtime_api.h>

#include <stoke/cuda/error.hpp>
#include <stoke/cuda/runtime.hpp>

namespace stoke::cuda {

/// Signals when the work recorded in a CUDA event has completed. Models `stoke::Fence`.
/// Copies share the event; a default fence has already signalled.
class Fence {
 public:
  /// A fence that has already signalled.
  Fence() = default;
  /// Records the work queued on `stream` (of `device`) so far.
  Fence(const Device& device, cudaStream_t stream) : event_(std::make_shared<Event>(device)) {
    event_->record(stream);
  }

  /// Whether the work is complete, without blocking; throws `DeviceError` if it failed.
  [[nodiscard]] bool ready() const {
    if (!event_) return true;
    const cudaError_t status = cudaEventQuery(event_->handle());
    if (status == cudaErrorNotReady) return false;
    STOKE_CUDA_CHECK(status);
    return true;
  }
  /// Blocks until the work is complete; throws `DeviceError` if it failed.
  void wait() const {
    if (event_) STOKE_CUDA_CHECK(cudaEventSynchronize(event_->handle()));
  }
  /// Makes later work on `stream` wait for this fence (without blocking the host).
  void enqueue_wait(cudaStream_t stream) const {
    if (event_) STOKE_CUDA_CHECK(cudaStreamWaitEvent(stream, event_->handle(), 0));
  }
  /// The event, or null for a fence made signalled.
  [[nodiscard]] cudaEvent_t event() const noexcept { return event_ ? event_->handle() : nullptr; }

 private:
  std::shared_ptr<Event> event_;
};

}  // namespace stoke::cuda

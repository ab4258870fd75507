#pragma once
/// @file
/// `cuda::detail::StepRecording`: the state of a step being captured on one device, owned by
/// the capture (`StepGraph`) and reached through the device's context, never through a
/// thread-local or global. The training operations (`training::detail::enqueue`) ask the
/// context of their buffers' device whether a recording is open there; one is, for the thread
/// that opened it, from `RecordingScope`'s start to its end.

#include <thread>
#include <utility>
#include <vector>

#include <cuda_runtime_api.h>

#include <stoke/core/error.hpp>
#include <stoke/cuda/buffer.hpp>
#include <stoke/cuda/device.hpp>
#include <stoke/cuda/runtime.hpp>

namespace stoke::cuda::detail {

/// The buffers a capture saw, each with the memory it held then: a launch orders the graph
/// after their fences and marks them, and the graph is stale once one holds other memory.
struct StepRecording {
  cudaStream_t stream = nullptr;  ///< the capturing stream (the device's compute stream)
  Device device;                  ///< its device
  /// Every buffer read, with its memory then.
  std::vector<std::pair<const Buffer*, const void*>> reads;
  /// Every buffer written, with its memory then.
  std::vector<std::pair<Buffer*, const void*>> writes;
};

/// Opens `recording` on its device's context for the calling thread while it lives: the
/// training operations this thread enqueues on that device are recorded into it. One
/// recording per device at a time (a second is a `StateError`); an operation that another
/// thread enqueues on the device meanwhile is refused (`DeviceContext::recording_for`).
class RecordingScope {
 public:
  /// Opens `recording` on `context` (the context of `recording.device`).
  RecordingScope(DeviceContext& context, StepRecording& recording) : context_(context) {
    context_.open_recording(&recording, std::this_thread::get_id());
  }
  RecordingScope(const RecordingScope&) = delete;
  RecordingScope& operator=(const RecordingScope&) = delete;
  /// Closes it.
  ~RecordingScope() { context_.close_recording(); }

 private:
  DeviceContext& context_;
};

}  // namespace stoke::cuda::detail

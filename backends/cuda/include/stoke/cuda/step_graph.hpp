#pragma once
/// @file
/// `cuda::StepGraph`: a training step captured once as a CUDA graph and launched every step
/// with one call, so the host hands the GPU a step in a few microseconds whatever its kernels.

#include <algorithm>
#include <cstddef>
#include <functional>
#include <memory>
#include <utility>
#include <vector>

#include <cuda_runtime_api.h>

#include <stoke/cuda/buffer.hpp>
#include <stoke/cuda/device.hpp>
#include <stoke/cuda/error.hpp>
#include <stoke/cuda/fence.hpp>
#include <stoke/cuda/runtime.hpp>
#include <stoke/cuda/step_recording.hpp>
#include <stoke/cuda/training.hpp>

namespace stoke::cuda {

/// The training operations one call enqueued on a device, captured as a CUDA graph (stream
/// capture of the device's compute stream, this thread only, so the loader's uploads on the
/// copy stream stay out of it). The graph reads and writes the memory its buffers held at
/// capture: `current()` says whether they still hold it, and `launch()` runs it once more,
/// ordered after every buffer's writes (and, for those it writes, their uses) and marking them
/// as the work of one `Fence`, as an uncaptured operation would. Move-only.
class StepGraph {
 public:
  /// No graph.
  StepGraph() = default;
  /// Captures what `record()` enqueues on `device` through the training operations. Every
  /// buffer they touch must exist already (run the step once uncaptured first); the scalars
  /// they pass become the graph's. Throws `DeviceError` when the runtime cannot capture it, and
  /// whatever `record` throws (the capture is then ended and dropped).
  StepGraph(const Device& device, const std::function<void()>& record)
      : context_(detail::DeviceContext::of(device)) {
    const DeviceGuard guard(device);
    detail::StepRecording captured{context_->compute_stream(), device, {}, {}};
    const cudaStream_t stream = captured.stream;
    cudaGraph_t graph = nullptr;
    {
      // The recording is open on the device's context for this thread while `record` runs.
      const detail::RecordingScope scope(*context_, captured);
      STOKE_CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
      try {
        record();
      } catch (...) {
        if (cudaStreamEndCapture(stream, &graph) == cudaSuccess && graph != nullptr) {
          (void)cudaGraphDestroy(graph);
        }
        (void)cudaGetLastError();
        throw;
      }
    }
    STOKE_CUDA_CHECK(cudaStreamEndCapture(stream, &graph));
    const cudaError_t made = cudaGraphInstantiate(&exec_, graph, 0);
    (void)cudaGraphDestroy(graph);
    STOKE_CUDA_CHECK(made);
    keep(captured);
  }
  StepGraph(StepGraph&& other) noexcept { *this = std::move(other); }
  StepGraph& operator=(StepGraph&& other) noexcept {
    if (this != &other) {
      destroy();
      context_ = std::move(other.context_);
      exec_ = std::exchange(other.exec_, nullptr);
      reads_ = std::move(other.reads_);
      writes_ = std::move(other.writes_);
    }
    return *this;
  }
  StepGraph(const StepGraph&) = delete;
  StepGraph& operator=(const StepGraph&) = delete;
  ~StepGraph() { destroy(); }

  /// Whether every buffer the graph touches still holds the memory it held at capture.
  [[nodiscard]] bool current() const noexcept {
    if (exec_ == nullptr) return false;
    const auto same = [](const auto& entry) { return entry.first->data() == entry.second; };
    return std::all_of(reads_.begin(), reads_.end(), same) &&
           std::all_of(writes_.begin(), writes_.end(), same);
  }

  /// Launches the graph on the device's compute stream, after the writes of the buffers it
  /// reads and the writes and uses of those it writes; marks them read and written by it.
  /// Needs `current()`.
  void launch() {
    const cudaStream_t stream = context_->compute_stream();
    const DeviceGuard guard(context_->device());
    for (const auto& [buffer, memory] : reads_) buffer->written().enqueue_wait(stream);
    for (const auto& [buffer, memory] : writes_) buffer->enqueue_wait_for_uses(stream);
    STOKE_CUDA_CHECK(cudaGraphLaunch(exec_, stream));
    const Fence done(context_->device(), stream);
    for (const auto& [buffer, memory] : reads_) buffer->record_use(done);
    for (const auto& [buffer, memory] : writes_) buffer->mark_written_after_uses(done);
  }

 private:
  /// Keeps each buffer once: those written (a buffer read and written counts as written), then
  /// those only read.
  void keep(const detail::StepRecording& captured) {
    for (const auto& entry : captured.writes) {
      if (std::none_of(writes_.begin(), writes_.end(),
                       [&](const auto& kept) { return kept.first == entry.first; })) {
        writes_.push_back(entry);
      }
    }
    for (const auto& entry : captured.reads) {
      const auto same = [&](const auto& kept) { return kept.first == entry.first; };
      if (std::none_of(writes_.begin(), writes_.end(), same) &&
          std::none_of(reads_.begin(), reads_.end(), same)) {
        reads_.push_back(entry);
      }
    }
  }

  void destroy() noexcept {
    if (exec_ == nullptr) return;
    (void)cudaGraphExecDestroy(exec_);
    exec_ = nullptr;
  }

  std::shared_ptr<detail::DeviceContext> context_;
  cudaGraphExec_t exec_ = nullptr;
  std::vector<std::pair<const Buffer*, const void*>> reads_;
  std::vector<std::pair<Buffer*, const void*>> writes_;
};

}  // namespace stoke::cuda

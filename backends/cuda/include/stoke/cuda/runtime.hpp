#pragma once
/// @file
/// RAII for the CUDA runtime: the current device, streams and events, and the per-device
/// context (a copy and a compute stream per device) that buffers and stagers share, and the pool
/// of idle events.

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <utility>

#include <cuda_runtime_api.h>

#include <stoke/core/device.hpp>
#include <stoke/core/error.hpp>
#include <stoke/cuda/device.hpp>
#include <stoke/cuda/error.hpp>

namespace stoke::cuda {

/// Makes `device` current for this thread while it lives, and restores the previous device
/// only if it switched: a thread that is already on `device` never touches another GPU (a
/// `cudaSetDevice(0)` on the way out would create a context on GPU 0 from every rank).
class DeviceGuard {
 public:
  /// Switches to `device` unless it is current.
  explicit DeviceGuard(const Device& device) {
    STOKE_CUDA_CHECK(cudaGetDevice(&previous_));
    if (previous_ != device.ordinal) {
      STOKE_CUDA_CHECK(cudaSetDevice(device.ordinal));
      switched_ = true;
    }
  }
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;
  ~DeviceGuard() {
    if (switched_) STOKE_CUDA_LOG(cudaSetDevice(previous_));
  }
  /// Whether it made `device` current (and will switch back).
  [[nodiscard]] bool switched() const noexcept { return switched_; }

 private:
  int previous_ = 0;
  bool switched_ = false;
};

/// A non-blocking CUDA stream on one device (move-only).
class Stream {
 public:
  /// A new stream on `device`.
  explicit Stream(const Device& device) : device_(device) {
    const DeviceGuard guard(device);
    STOKE_CUDA_CHECK(cudaStreamCreateWithFlags(&handle_, cudaStreamNonBlocking));
  }
  Stream(Stream&& other) noexcept
      : device_(other.device_), handle_(std::exchange(other.handle_, nullptr)) {}
  Stream& operator=(Stream&& other) noexcept {
    std::swap(device_, other.device_);
    std::swap(handle_, other.handle_);
    return *this;
  }
  ~Stream() {
    if (handle_ != nullptr) STOKE_CUDA_LOG(cudaStreamDestroy(handle_));
  }

  /// The stream handle.
  [[nodiscard]] cudaStream_t handle() const noexcept { return handle_; }
  /// Its device.
  [[nodiscard]] const Device& device() const noexcept { return device_; }

 private:
  Device device_;
  cudaStream_t handle_ = nullptr;
};

namespace detail {
/// Idle CUDA events (without timing) of every GPU, handed out again: making and destroying an
/// event for every fence costs two runtime calls a fence, several times a step. Thread-safe;
/// never destroyed (no event is destroyed after the runtime at exit).
class EventPool {
 public:
  /// An idle event of `device`'s GPU: a recycled one, else a new one.
  static cudaEvent_t take(const Device& device);
  /// Hands `event` of GPU `ordinal` back. Work already made to wait on it keeps waiting on what
  /// it recorded then (a later record does not change an earlier wait), so it may be recorded
  /// again at once.
  static void give(int ordinal, cudaEvent_t event) noexcept;
};
}  // namespace detail

/// A CUDA event without timing, recorded once on a stream (move-only), from the device's
/// `detail::EventPool`.
class Event {
 public:
  /// An event on `device`.
  explicit Event(const Device& device)
      : handle_(detail::EventPool::take(device)), ordinal_(device.ordinal) {}
  Event(Event&& other) noexcept
      : handle_(std::exchange(other.handle_, nullptr)), ordinal_(other.ordinal_) {}
  Event& operator=(Event&& other) noexcept {
    std::swap(handle_, other.handle_);
    std::swap(ordinal_, other.ordinal_);
    return *this;
  }
  ~Event() {
    if (handle_ != nullptr) detail::EventPool::give(ordinal_, handle_);
  }

  /// Records the work queued on `stream` so far.
  void record(cudaStream_t stream) { STOKE_CUDA_CHECK(cudaEventRecord(handle_, stream)); }
  /// The event handle.
  [[nodiscard]] cudaEvent_t handle() const noexcept { return handle_; }

 private:
  cudaEvent_t handle_ = nullptr;
  int ordinal_ = 0;  ///< its GPU
};

namespace detail {

/// What every user of one device shares: its copy stream (uploads, downloads, the batchers'
/// kernels) and its compute stream (training). Two streams, so a batch's upload never queues
/// behind a step's kernels, nor a step behind the loader: the work of one is ordered after the
/// other's only through the buffers' fences. Lives as long as a buffer, a stager or a fence of
/// the device needs it.
struct StepRecording;  // step_recording.hpp

class DeviceContext {
 public:
  /// The context of `device`, made on first use (thread-safe).
  static std::shared_ptr<DeviceContext> of(const Device& device);

  /// Makes the copy stream and keeps freed memory in the device's default pool: with the
  /// pool's release threshold at its default (0), every synchronisation would hand the
  /// memory back to the driver and the next batch would map it anew.
  explicit DeviceContext(const Device& device) : device_(device), copy_(device), compute_(device) {
    const DeviceGuard guard(device);
    cudaMemPool_t pool = nullptr;
    STOKE_CUDA_CHECK(cudaDeviceGetDefaultMemPool(&pool, device.ordinal));
    std::uint64_t keep = UINT64_MAX;
    STOKE_CUDA_CHECK(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep));
  }
  /// The device.
  [[nodiscard]] const Device& device() const noexcept { return device_; }
  /// The device's copy stream: uploads, downloads, the batcher's kernels, frees.
  [[nodiscard]] cudaStream_t copy_stream() const noexcept { return copy_.handle(); }
  /// The device's compute stream: the training operations, captured steps among them.
  [[nodiscard]] cudaStream_t compute_stream() const noexcept { return compute_.handle(); }

  /// The step recording open on this device for `thread` (a `StepGraph`'s capture), or null
  /// where none is open. Throws `UsageError` where one is open for another thread: while a
  /// step is captured, the device's operations come from the capturing thread only.
  [[nodiscard]] StepRecording* recording_for(std::thread::id thread) const {
    StepRecording* const recording = recording_.load(std::memory_order_acquire);
    if (recording == nullptr || recorder_ == thread) return recording;
    throw UsageError("stoke: cuda: an operation on " + device_name(device_) +
                     " from another thread while a step is captured there");
  }
  /// Opens `recording` for `thread` (step_recording.hpp's `RecordingScope`). Throws
  /// `StateError` where one is open already.
  void open_recording(StepRecording* recording, std::thread::id thread) {
    if (recording_.load(std::memory_order_acquire) != nullptr) {
      throw StateError("stoke: cuda: a step is already being captured on " + device_name(device_));
    }
    recorder_ = thread;
    recording_.store(recording, std::memory_order_release);
  }
  /// Closes the open recording.
  void close_recording() noexcept {
    recording_.store(nullptr, std::memory_order_release);
    recorder_ = {};
  }

 private:
  Device device_;
  Stream copy_;
  Stream compute_;
  std::atomic<StepRecording*> recording_{nullptr};  ///< the step being captured, if any
  std::thread::id recorder_{};                      ///< the thread capturing it
};

}  // namespace detail
}  // namespace stoke::cuda

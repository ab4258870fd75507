#pragma once
/// @file
/// `cuda::Backend`: the CUDA backend, a `stoke::StagingBackend`, `stoke::CollectiveBackend` and
/// `stoke::DeviceBackend` whose devices are the visible CUDA devices and lanes on them.

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <cuda_runtime_api.h>

#include <stoke/core/collective.hpp>
#include <stoke/core/error.hpp>
#include <stoke/core/staging.hpp>
#include <stoke/cuda/buffer.hpp>
#include <stoke/cuda/device.hpp>
#include <stoke/cuda/fence.hpp>
#include <stoke/cuda/lane_collective.hpp>
#include <stoke/cuda/stager.hpp>
#include <stoke/cuda/step_graph.hpp>
#include <stoke/cuda/training.hpp>

namespace stoke::cuda {

/// The status `cudaGetDeviceCount` returns here, and the count (0 unless it succeeded).
struct DeviceCount {
  cudaError_t status = cudaSuccess;  ///< what `cudaGetDeviceCount` returned
  int count = 0;                     ///< visible devices
};

/// Asks the runtime how many devices are visible.
[[nodiscard]] inline DeviceCount device_count() noexcept {
  DeviceCount out;
  out.status = cudaGetDeviceCount(&out.count);
  if (out.status != cudaSuccess) {
    out.count = 0;
    (void)cudaGetLastError();  // clear the error, so later calls do not report it again
  }
  return out;
}

/// Why no CUDA device is usable here (empty when one is).
[[nodiscard]] inline std::string unavailable_reason() {
  const DeviceCount found = device_count();
  if (found.status != cudaSuccess) {
    return std::string("no CUDA device: cudaGetDeviceCount returned ") +
           cudaGetErrorName(found.status) + " (" + cudaGetErrorString(found.status) + ")";
  }
  if (found.count == 0) return "no CUDA device: cudaGetDeviceCount found 0 devices";
  return {};
}

/// The CUDA backend. Uploads go through `Stager`s (pinned staging buffers, the device's copy
/// stream, events as fences) into `cudaMallocAsync` memory; all_reduce sums device buffers with
/// `LaneCollective` (the lanes of a GPU on the device, NCCL across GPUs). Models train in device
/// memory through the kernels of `training.hpp` (`training::Operations`, the `stoke::DeviceBackend`
/// members it derives).
struct Backend : training::Operations {
  using Device = cuda::Device;        ///< `cuda:N`
  using Buffer = cuda::Buffer;        ///< device memory
  using Fence = cuda::Fence;          ///< a recorded event
  using Stager = cuda::Stager;        ///< uploads through pinned staging buffers
  using Tensor = cuda::Buffer;        ///< floats in device memory
  using Collective = LaneCollective;  ///< lanes summed on their GPU, NCCL across GPUs
  using StepGraph = cuda::StepGraph;  ///< a training step captured as a CUDA graph

  /// `"cuda"`.
  static constexpr std::string_view name() noexcept { return "cuda"; }

  /// The visible GPUs `cuda:0 .. cuda:N-1` (lane 0 of each); none when there is no device or no
  /// driver
  /// (`unavailable_reason` says why). Other runtime errors throw.
  static std::vector<Device> devices() {
    const DeviceCount found = device_count();
    if (found.status == cudaErrorNoDevice || found.status == cudaErrorInsufficientDriver) return {};
    STOKE_CUDA_CHECK(found.status);
    std::vector<Device> out(static_cast<std::size_t>(found.count));
    for (int i = 0; i < found.count; ++i) out[static_cast<std::size_t>(i)].ordinal = i;
    return out;
  }

  /// `count` devices laid over the visible GPUs, lanes round-robin (`lanes_over`): on one
  /// GPU `cuda:0, cuda:0.1, cuda:0.2, ...`; on two `cuda:0, cuda:1, cuda:0.1, ...`. Throws
  /// `UsageError` when they cannot be given (no GPU visible, saying why, or more than
  /// `max_lanes_per_gpu` lanes on a GPU); other runtime errors throw.
  static std::vector<Device> devices(std::size_t count) {
    const DeviceCount found = device_count();
    if (found.status != cudaErrorNoDevice && found.status != cudaErrorInsufficientDriver) {
      STOKE_CUDA_CHECK(found.status);
    }
    if (found.count == 0 && count > 0) {
      throw UsageError("cuda: " + std::to_string(count) + " devices asked for, but " +
                       cuda::unavailable_reason());
    }
    return lanes_over(static_cast<std::size_t>(found.count), count);
  }

  /// The training operations `record()` enqueues on `device`, captured as one graph
  /// (`stoke::CapturingBackend`).
  static StepGraph capture_step(const Device& device, const std::function<void()>& record) {
    return StepGraph(device, record);
  }

  /// Why no device is visible (empty when one is).
  static std::string unavailable_reason() { return cuda::unavailable_reason(); }

  /// A stager for `device` with at most `slots` staging buffers.
  static std::unique_ptr<Stager> make_stager(const Device& device, std::size_t slots) {
    return std::make_unique<Stager>(device, slots);
  }

  /// The collective of the local `devices` (one thread each), lanes of one GPU included:
  /// `LaneCollective`. Several GPUs need NCCL (`UsageError` in a build without it).
  static std::unique_ptr<Collective> make_collective(const std::vector<Device>& devices) {
    return std::make_unique<Collective>(devices);
  }
};

static_assert(stoke::StagingBackend<Backend>);
static_assert(stoke::CollectiveBackend<Backend>);

}  // namespace stoke::cuda

#pragma once
/// @file
/// stoke's CUDA batches as CUDA `torch::Tensor`s without a copy: `to_torch` hands a
/// `cuda::ImageBatch` (from `cuda::ImageBatcher`, or a host batch `prefetch_to_device` brought
/// to the GPU) to libtorch through DLPack, on the batch's GPU. Built where stoke::cuda is
/// (`STOKE_LIBTORCH_HAS_CUDA`), against torch's CUDA libraries.
///
/// Streams, as DLPack's consumer contract asks: torch's current stream of the batch's GPU
/// waits (on the GPU, not the host) for the batch to be ready before any work queued there
/// after `to_torch`; work on another torch stream must wait for that one (as for any tensor).
/// Lifetimes are those of host batches (tensors.hpp), and when the last tensor is gone the
/// batch's device memory is freed only after the work queued by then on that stream (as
/// torch's `record_stream` does): a kernel still reading it keeps it.

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>

#include <ATen/ATen.h>
#include <ATen/dlpack.h>
#include <c10/cuda/CUDAStream.h>

#include <stoke/core/error.hpp>
#include <stoke/cuda/batcher.hpp>
#include <stoke/data/batch.hpp>
#include <stoke/libtorch/tensors.hpp>

namespace stoke::libtorch {

namespace detail {

/// Deletes a CUDA batch handed to torch once its last tensor is gone: its buffers record the
/// work queued on torch's stream `stream` so far as a use, so their memory outlives it.
struct CudaBatchRelease {
  cudaStream_t stream;  ///< torch's stream the tensors were handed to

  void operator()(const cuda::ImageBatch* batch) const noexcept {
    try {
      batch->inputs.record_use(stream);
      batch->device_labels.record_use(stream);
    } catch (const stoke::Error&) {  // the device is gone: its memory with it
    }
    delete batch;  // NOLINT(cppcoreguidelines-owning-memory): the shared_ptr's deleter
  }
};

}  // namespace detail

/// `batch` as torch tensors on its GPU (`cuda:<ordinal>`; a lane is stoke's, torch sees the
/// GPU) over the batch's device memory: `inputs` `{rows, row_size}` float32, `labels` `{rows}`
/// int32 (the batch's device labels: every CUDA batcher and stage makes them; a batch without
/// is refused with `UsageError`). Torch's current stream of that GPU waits for the batch to be
/// ready. Torch computes on them where the program links torch's CUDA kernels (libtorch_cuda).
[[nodiscard]] inline ClassificationTensors to_torch(cuda::ImageBatch&& batch) {
  const int ordinal = batch.device().ordinal;
  const cudaStream_t stream =
      c10::cuda::getCurrentCUDAStream(static_cast<c10::DeviceIndex>(ordinal)).stream();
  batch.ready.enqueue_wait(stream);
  const std::shared_ptr<const cuda::ImageBatch> owner(new cuda::ImageBatch(std::move(batch)),
                                                      detail::CudaBatchRelease{stream});
  const DLDevice device{kDLCUDA, ordinal};
  const std::array<std::int64_t, 2> input_shape{static_cast<std::int64_t>(owner->rows),
                                                static_cast<std::int64_t>(owner->row_size)};
  const std::array<std::int64_t, 1> label_shape{static_cast<std::int64_t>(owner->rows)};
  ClassificationTensors out;
  out.inputs =
      view<float>(owner, static_cast<const float*>(owner->inputs.data()), input_shape, device);
  if (owner->rows != 0 && owner->device_labels.size() < owner->rows * sizeof(std::int32_t)) {
    throw UsageError("stoke::libtorch: a CUDA batch of " + std::to_string(owner->rows) +
                     " rows whose device labels hold " +
                     std::to_string(owner->device_labels.size() / sizeof(std::int32_t)));
  }
  out.labels = view<std::int32_t>(
      owner, static_cast<const std::int32_t*>(owner->device_labels.data()), label_shape, device);
  return out;
}

/// A loader's CUDA batch with its data as CUDA torch tensors: epoch, step, padding and indices
/// carry over.
[[nodiscard]] inline Batch<ClassificationTensors> to_torch(Batch<cuda::ImageBatch>&& batch) {
  return {to_torch(std::move(batch.data)), batch.epoch, batch.step, batch.padding,
          std::move(batch.indices)};
}

}  // namespace stoke::libtorch

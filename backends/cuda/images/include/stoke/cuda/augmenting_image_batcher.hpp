#pragma once
/// @file
/// `cuda::AugmentingImageBatcher`: encoded images (JPEG, PNG) to an augmented, normalised float
/// batch on a CUDA device, rendered to bytes on the host and flipped and normalised by the
/// `normalize_flip_chw` kernel. Needs `stoke::images` and `stoke::cuda`.

#include <cstddef>
#include <cstdint>
#include <span>
#include <utility>

#include <cuda_runtime_api.h>

#include <stoke/cuda/batcher.hpp>
#include <stoke/cuda/buffer.hpp>
#include <stoke/cuda/device.hpp>
#include <stoke/cuda/error.hpp>
#include <stoke/cuda/fence.hpp>
#include <stoke/cuda/kernels.hpp>
#include <stoke/cuda/runtime.hpp>
#include <stoke/cuda/stager.hpp>
#include <stoke/images/device_image_batcher.hpp>
#include <stoke/images/normalization.hpp>

namespace stoke::cuda {

namespace detail {

/// The CUDA half of `AugmentingImageBatcher` (see `images::DeviceImageBatcher`).
struct CudaRows {
  using Device = cuda::Device;                  ///< a CUDA device
  using Batch = cuda::ImageBatch;               ///< rows x row_size floats on it
  using Resources = cuda::detail::StagerCache;  ///< per-device stagers
  /// The batcher's name in errors.
  static constexpr const char* name = "cuda::AugmentingImageBatcher";

  /// Fills `layout.bytes` of pinned staging memory with `fill`, uploads them and `labels` to
  /// `device` and queues the kernel after both copies on the device's copy stream, the
  /// normalisation's tables passed by value; the batch without its host labels.
  template <class Fill>
  static Batch run(Resources& stagers, const Device& device,
                   const images::detail::StagedRows& layout,
                   const images::Normalization& normalization, Fill&& fill,
                   std::span<const std::int32_t> labels) {
    cuda::Stager& stager = stagers.of(device);
    auto staged = stager.upload_with(layout.bytes, fill);
    auto device_labels = stager.upload(std::as_bytes(labels));
    cuda::kernels::ChannelTables tables{};
    for (std::uint32_t c = 0; c < normalization.channels(); ++c) {
      const auto& table = normalization.table(c);
      for (std::size_t b = 0; b < table.size(); ++b) tables.values[c][b] = table[b];
    }
    // The kernel runs on the copy stream, after the upload; the staged buffer is freed in
    // stream order after it.
    const cuda::DeviceGuard guard(device);
    const cudaStream_t stream = stager.context()->copy_stream();
    cuda::Buffer inputs(stager.context(), layout.values() * sizeof(float));
    const auto* bytes = static_cast<const std::uint8_t*>(staged.value.data());
    const auto* flips = layout.rows == 0
                            ? nullptr
                            : reinterpret_cast<const std::uint32_t*>(bytes + layout.flips_offset);
    const cuda::kernels::ImageRowsShape shape{static_cast<std::uint32_t>(layout.rows),
                                              layout.shape.height, layout.shape.width,
                                              layout.shape.channels};
    STOKE_CUDA_CHECK(cuda::kernels::normalize_flip_chw(
        bytes, flips, static_cast<float*>(inputs.data()), shape, tables, stream));
    cuda::Fence ready(device, stream);
    inputs.mark_written(ready);
    staged.value.mark_written(ready);
    return Batch{std::move(inputs), {},
                 layout.rows,       layout.row_size(),
                 std::move(ready),  std::move(device_labels.value)};
  }
};

}  // namespace detail

/// Batches `EncodedImage`s into a `cuda::ImageBatch` (`rows x row_size` CHW floats,
/// `row_size = channels * height * width`) on the requested CUDA device, equal bit for bit to
/// `ImageBatcher`'s batch: the rows are rendered to bytes on the loader's worker, straight
/// into the pinned staging memory of the upload, and flipped and normalised by the
/// `normalize_flip_chw` kernel with the host's tables (see `images::DeviceImageBatcher`).
///
///     cuda::AugmentingImageBatcher batcher{.augmentation = ..., .normalization = ...};
///     auto loader = DataLoaderBuilder<cuda::Backend, cuda::AugmentingImageBatcher>(batcher)
///                       .batch_size(64).num_workers(4).build(dataset);
using AugmentingImageBatcher = images::DeviceImageBatcher<detail::CudaRows>;

}  // namespace stoke::cuda

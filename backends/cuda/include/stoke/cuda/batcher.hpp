#pragma once
/// @file
/// `cuda::ImageBatcher`: byte images normalised on the device by a kernel. Each device's
/// loader fills its own device: no detour through `cuda:0`. (A host batcher's batches reach a
/// CUDA device through `prefetch_to_device`.)

#include <cstddef>
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include <stoke/cuda/buffer.hpp>
#include <stoke/cuda/device.hpp>
#include <stoke/cuda/error.hpp>
#include <stoke/cuda/fence.hpp>
#include <stoke/cuda/kernels.hpp>
#include <stoke/cuda/stager.hpp>
#include <stoke/data/device_image_batch.hpp>
#include <stoke/data/image_batch_checks.hpp>
#include <stoke/data/labeled_image.hpp>
#include <stoke/data/normalization_table.hpp>

namespace stoke::cuda {

/// A batch of labelled images on a CUDA device.
using ImageBatch = DeviceImageBatch<Buffer, Fence>;

/// Batches `LabeledImage`s into an `ImageBatch` on the requested CUDA device: the labels and
/// pixel bytes are gathered into a pinned staging buffer, copied to the device, and turned into
/// floats
/// `(b / 255 - mean) / std` by a kernel on the device's copy stream, so four times fewer
/// bytes cross the bus than for a host-normalised batch. The values equal
/// `cpu::ImageBatcher`'s, which refuses the same inputs with the same `InputError`s.
/// Copies share the per-device stagers; thread-safe.
class ImageBatcher : public stoke::ByteImageNormalization {
 public:
  /// Normalises with `mean` and `std`, staging through `staging_slots` buffers per device.
  explicit ImageBatcher(float mean = 0.0F, float std = 1.0F, std::size_t staging_slots = 4)
      : ByteImageNormalization(mean, std),
        table_(kernels::ByteTable::of(stoke::normalization_table(mean, std))),
        stagers_(std::make_shared<detail::StagerCache>(staging_slots)) {}

  /// The batch of `items`, on `device`: labels and pixel bytes staged and copied as one
  /// buffer (which the batch keeps as its device labels: its first `rows` words), then the
  /// pixels normalised into the inputs.
  ImageBatch batch(std::vector<LabeledImage> items, const Device& device) const {
    stoke::ImageRows rows = checked_rows("cuda::ImageBatcher", items);
    const std::size_t count = rows.rows * rows.pixels;
    Stager& stager = stagers_->of(device);
    auto labelled = stoke::upload_labelled_image_rows(stager, items, rows);
    // The kernel runs on the copy stream, after the upload (so `ready` covers the labels).
    const DeviceGuard guard(device);
    const cudaStream_t stream = stager.context()->copy_stream();
    Buffer inputs(stager.context(), count * sizeof(float));
    const auto* pixels =
        static_cast<const std::uint8_t*>(labelled.value.data()) + stoke::labelled_rows_offset(rows);
    STOKE_CUDA_CHECK(
        kernels::normalize_u8(pixels, static_cast<float*>(inputs.data()), count, table_, stream));
    Fence ready(device, stream);
    inputs.mark_written(ready);
    labelled.value.mark_written(ready);
    return ImageBatch{std::move(inputs), std::move(rows.labels), rows.rows,
                      rows.pixels,       std::move(ready),       std::move(labelled.value)};
  }

 private:
  kernels::ByteTable table_;  ///< the CPU batcher's values of every byte
  std::shared_ptr<detail::StagerCache> stagers_;
};

}  // namespace stoke::cuda

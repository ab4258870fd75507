#pragma once
/// @file
/// Batchers of the CUDA backend: `UploadBatcher` (a host batcher's output copied to the
/// requested device) and `ImageBatcher` (byte images normalised on the device by a kernel).
/// Each device's loader fills its own device: no detour through `cuda:0`.

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include <stoke/core/error.hpp>
#include <stoke/cpu/device.hpp>
#include <stoke/cuda/buffer.hpp>
#include <stoke/cuda/device.hpp>
#include <stoke/cuda/error.hpp>
#include <stoke/cuda/fence.hpp>
#include <stoke/cuda/kernels.hpp>
#include <stoke/cuda/stager.hpp>
#include <stoke/data/detail/image_batch_checks.hpp>
#include <stoke/data/detail/normalization_table.hpp>
#include <stoke/data/device_image_batch.hpp>
#include <stoke/data/labeled_image.hpp>
#include <stoke/data/prefetch.hpp>

namespace stoke::cuda {

/// A batch that a host batcher made and that was uploaded to a CUDA device.
struct UploadedBatch {
  Buffer values;  ///< the host batch's bytes (`stoke::host_bytes`), on the device
  Fence ready;    ///< signals when `values` holds them

  /// The device the batch lives on.
  [[nodiscard]] Device device() const noexcept { return values.device(); }
};

/// Wraps a host batcher (one that batches for `cpu::Device`, such as `cpu::StackBatcher`):
/// its batch is made on the calling worker thread, then its bytes are uploaded to the device
/// the batch is for, through that device's own stager. `batch` returns once the copy is
/// queued; `ready` signals when it is done.
template <class Inner>
class UploadBatcher {
 public:
  /// Uploads `inner`'s batches through `staging_slots` staging buffers per device.
  explicit UploadBatcher(Inner inner, std::size_t staging_slots = 4)
      : inner_(std::move(inner)), stagers_(std::make_shared<detail::StagerCache>(staging_slots)) {}

  /// The batch of `items`, on `device`.
  template <class Item>
  UploadedBatch batch(std::vector<Item> items, const Device& device) const {
    const auto host = inner_.batch(std::move(items), cpu::Device{});
    auto staged = stagers_->of(device).upload(host_bytes(host));
    return UploadedBatch{std::move(staged.value), std::move(staged.fence)};
  }

 private:
  Inner inner_;
  std::shared_ptr<detail::StagerCache> stagers_;
};

/// A batch of labelled images on a CUDA device.
using ImageBatch = DeviceImageBatch<Buffer, Fence>;

/// Batches `LabeledImage`s into an `ImageBatch` on the requested CUDA device: the pixel bytes
/// are gathered into a pinned staging buffer, copied to the device, and turned into floats
/// `(b / 255 - mean) / std` by a kernel on the device's copy stream, so four times fewer
/// bytes cross the bus than for a host-normalised batch. The values equal
/// `cpu::ImageBatcher`'s, which refuses the same inputs with the same `InputError`s.
/// Copies share the per-device stagers; thread-safe.
class ImageBatcher : public stoke::detail::ByteImageNormalization {
 public:
  /// Normalises with `mean` and `std`, staging through `staging_slots` buffers per device.
  explicit ImageBatcher(float mean = 0.0F, float std = 1.0F, std::size_t staging_slots = 4)
      : ByteImageNormalization(mean, std),
        table_(kernels::ByteTable::of(stoke::detail::normalization_table(mean, std))),
        stagers_(std::make_shared<detail::StagerCache>(staging_slots)) {}

  /// The batch of `items`, on `device`.
  ImageBatch batch(std::vector<LabeledImage> items, const Device& device) const {
    stoke::detail::ImageRows rows = checked_rows("cuda::ImageBatcher", items);
    const std::size_t count = rows.rows * rows.pixels;
    Stager& stager = stagers_->of(device);
    auto bytes = stoke::detail::upload_image_rows(stager, items, rows);
    // The kernel runs on the copy stream, after the upload; the byte buffer is freed in
    // stream order after it.
    const DeviceGuard guard(device);
    const cudaStream_t stream = stager.context()->copy_stream();
    Buffer inputs(stager.context(), count * sizeof(float));
    STOKE_CUDA_CHECK(kernels::normalize_u8(static_cast<const std::uint8_t*>(bytes.value.data()),
                                           static_cast<float*>(inputs.data()), count, table_,
                                           stream));
    Fence ready(device, stream);
    inputs.mark_written(ready);
    bytes.value.mark_written(ready);
    return ImageBatch{std::move(inputs), std::move(rows.labels), rows.rows, rows.pixels,
                      std::move(ready)};
  }

 private:
  kernels::ByteTable table_;  ///< the CPU batcher's values of every byte
  std::shared_ptr<detail::StagerCache> stagers_;
};

}  // namespace stoke::cuda

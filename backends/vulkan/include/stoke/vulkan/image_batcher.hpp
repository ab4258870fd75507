#pragma once
/// @file
/// `vulkan::ImageBatcher`: labelled byte images to a normalised float batch on a Vulkan
/// device. It uploads the bytes (a quarter of the floats' size) and normalises them there.

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
#include <stoke/data/device_image_batch.hpp>
#include <stoke/data/image_batch_checks.hpp>
#include <stoke/data/labeled_image.hpp>
#include <stoke/vulkan/buffer.hpp>
#include <stoke/vulkan/context.hpp>
#include <stoke/vulkan/device.hpp>
#include <stoke/vulkan/fence.hpp>
#include <stoke/vulkan/normalize_pipeline.hpp>
#include <stoke/vulkan/registry.hpp>
#include <stoke/vulkan/stager.hpp>

namespace stoke::vulkan {

/// A batch of labelled images on a Vulkan device.
using ImageBatch = DeviceImageBatch<Buffer, Fence>;

namespace detail {

/// The stager and pipeline of every device a batcher (and its copies) batched for: a
/// `Pipeline` is made from the device's context (`NormalizePipeline` for `ImageBatcher`).
template <class Pipeline>
class DeviceResources {
 public:
  /// What one device needs.
  struct PerDevice {
    std::shared_ptr<Context> context;    ///< the device's context
    std::shared_ptr<Stager> stager;      ///< uploads to it
    std::shared_ptr<Pipeline> pipeline;  ///< runs on it
  };

  /// Resources whose stagers hold `slots` staging buffers each.
  explicit DeviceResources(std::size_t slots) : slots_(slots) {}

  /// The resources of `device`, made on first use.
  PerDevice of(const Device& device) {
    std::lock_guard lock(mutex_);
    PerDevice& entry = devices_[device];
    if (!entry.context) {
      auto made = context(device);
      entry.stager = std::make_shared<Stager>(made, slots_);
      entry.pipeline = std::make_shared<Pipeline>(made);
      entry.context = std::move(made);
    }
    return entry;
  }

 private:
  std::size_t slots_;
  std::mutex mutex_;
  std::unordered_map<Device, PerDevice> devices_;
};

/// The stager and pipeline of every device an `ImageBatcher` (and its copies) batched for.
using ImageBatcherResources = DeviceResources<NormalizePipeline>;

}  // namespace detail

/// Batches `LabeledImage`s into an `ImageBatch` on the requested Vulkan device: the pixel
/// bytes are gathered into a staging buffer, copied to the device, and turned into floats
/// `(b / 255 - mean) / std` by the `normalize_u8` compute shader, so four times fewer bytes
/// cross to the device than for a host-normalised batch; the labels are uploaded too.
/// `batch` returns once the work is submitted; the batch's `ready` fence signals when it is
/// done.
///
/// It refuses what `cpu::ImageBatcher` refuses, with the same `InputError`s: images
/// of a different pixel count than the first, labels above `INT32_MAX`, a `std` that is zero
/// or not finite. Copies share the per-device stagers and pipelines; thread-safe.
class ImageBatcher : public stoke::ByteImageNormalization {
 public:
  /// Normalises with `mean` and `std`, staging through `staging_slots` buffers per device.
  explicit ImageBatcher(float mean = 0.0F, float std = 1.0F, std::size_t staging_slots = 4)
      : ByteImageNormalization(mean, std),
        resources_(std::make_shared<detail::ImageBatcherResources>(staging_slots)) {}

  /// The batch of `items`, on `device`.
  ImageBatch batch(std::vector<LabeledImage> items, const Device& device) const {
    stoke::ImageRows rows = checked_rows("vulkan::ImageBatcher", items);
    const std::size_t count = rows.rows * rows.pixels;
    const detail::ImageBatcherResources::PerDevice resources = resources_->of(device);
    auto bytes = stoke::upload_image_rows(*resources.stager, items, rows);
    auto labels = resources.stager->upload(std::as_bytes(std::span(rows.labels)));
    Buffer inputs(resources.context, count * sizeof(float));
    const Fence uploads[] = {bytes.fence, labels.fence};
    Fence ready = resources.pipeline->run(bytes.value, inputs, count, mean(), std(), uploads);
    return ImageBatch{std::move(inputs), std::move(rows.labels), rows.rows,
                      rows.pixels,       std::move(ready),       std::move(labels.value)};
  }

 private:
  std::shared_ptr<detail::ImageBatcherResources> resources_;
};

}  // namespace stoke::vulkan

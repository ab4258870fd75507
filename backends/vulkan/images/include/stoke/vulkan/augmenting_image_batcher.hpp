#pragma once
/// @file
/// `vulkan::AugmentingImageBatcher`: encoded images (JPEG, PNG) to an augmented, normalised float
/// batch on a Vulkan device, rendered to bytes on the host and flipped and normalised by the
/// `normalize_flip_chw` shader. Needs `stoke::images` and `stoke::vulkan`.

#include <cstddef>
#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <span>
#include <utility>
#include <vector>

#include <stoke/images/device_image_batcher.hpp>
#include <stoke/images/normalization.hpp>
#include <stoke/vulkan/buffer.hpp>
#include <stoke/vulkan/context.hpp>
#include <stoke/vulkan/device.hpp>
#include <stoke/vulkan/fence.hpp>
#include <stoke/vulkan/image_batcher.hpp>
#include <stoke/vulkan/normalize_flip_pipeline.hpp>
#include <stoke/vulkan/stager.hpp>

namespace stoke::vulkan {

namespace detail {

/// What an `AugmentingImageBatcher` keeps on one device besides its stager: the pipeline, and the
/// byte-to-float tables of each normalisation it met, uploaded once. Thread-safe.
class VulkanNormalizeFlip {
 public:
  /// The pipeline on `context`'s device.
  explicit VulkanNormalizeFlip(std::shared_ptr<vulkan::Context> context)
      : pipeline_(std::move(context)) {}

  /// Submits the flip and normalisation of the rows staged in `staged` (laid out as `layout`
  /// says) into `values` with the tables of `normalization` (uploaded through `stager` the
  /// first time), after `after`; returns its fence.
  vulkan::Fence run(vulkan::Stager& stager, const images::Normalization& normalization,
                    const vulkan::Buffer& staged, vulkan::Buffer& values,
                    const images::detail::StagedRows& layout,
                    std::span<const vulkan::Fence> after) {
    const vulkan::NormalizeFlipPipeline::Shape shape{
        static_cast<std::uint32_t>(layout.rows), layout.shape.height, layout.shape.width,
        layout.shape.channels, static_cast<std::uint32_t>(layout.flips_offset / 4)};
    // Dispatches share the tables buffer, whose record of its readers is not synchronised.
    std::lock_guard lock(mutex_);
    return pipeline_.run(staged, tables_of(normalization, stager), values, shape, after);
  }

 private:
  /// The tables of `normalization` on the device (the caller holds `mutex_`).
  const vulkan::Buffer& tables_of(const images::Normalization& normalization,
                                  vulkan::Stager& stager) {
    std::vector<float> values;
    values.reserve(std::size_t{normalization.channels()} * 256);
    for (std::uint32_t c = 0; c < normalization.channels(); ++c) {
      const auto& table = normalization.table(c);
      values.insert(values.end(), table.begin(), table.end());
    }
    for (const Tables& known : tables_) {
      if (known.values == values) return known.buffer;
    }
    vulkan::Buffer buffer = stager.upload(std::as_bytes(std::span(values))).value;
    return tables_.emplace_back(Tables{std::move(values), std::move(buffer)}).buffer;
  }

  /// One normalisation's tables, on the host and on the device.
  struct Tables {
    std::vector<float> values;  ///< 256 a channel
    vulkan::Buffer buffer;      ///< the same, on the device
  };

  vulkan::NormalizeFlipPipeline pipeline_;
  std::mutex mutex_;
  std::list<Tables> tables_;  ///< a list: the buffers never move
};

/// The Vulkan half of `AugmentingImageBatcher` (see `images::DeviceImageBatcher`).
struct VulkanRows {
  using Device = vulkan::Device;     ///< a Vulkan device
  using Batch = vulkan::ImageBatch;  ///< rows x row_size floats on it
  /// Per-device stagers, pipelines and tables.
  using Resources = vulkan::detail::DeviceResources<VulkanNormalizeFlip>;
  /// The batcher's name in errors.
  static constexpr const char* name = "vulkan::AugmentingImageBatcher";

  /// Fills `layout.bytes` of staging memory with `fill`, uploads them and `labels` to `device`
  /// and submits the shader after both; the batch without its host labels.
  template <class Fill>
  static Batch run(Resources& resources, const Device& device,
                   const images::detail::StagedRows& layout,
                   const images::Normalization& normalization, Fill&& fill,
                   std::span<const std::int32_t> labels) {
    const Resources::PerDevice on = resources.of(device);
    auto staged = on.stager->upload_with(layout.bytes, fill);
    auto device_labels = on.stager->upload(std::as_bytes(labels));
    vulkan::Buffer inputs(on.context, layout.values() * sizeof(float));
    const vulkan::Fence uploads[] = {staged.fence, device_labels.fence};
    vulkan::Fence ready =
        on.pipeline->run(*on.stager, normalization, staged.value, inputs, layout, uploads);
    return Batch{std::move(inputs), {},
                 layout.rows,       layout.row_size(),
                 std::move(ready),  std::move(device_labels.value)};
  }
};

}  // namespace detail

/// Batches `EncodedImage`s into a `vulkan::ImageBatch` (`rows x row_size` CHW floats,
/// `row_size = channels * height * width`) on the requested Vulkan device, equal bit for bit
/// to `images::ImageBatcher`'s batch: the rows are rendered to bytes on the loader's worker,
/// straight into the staging memory of the upload, and flipped and normalised by the
/// `normalize_flip_chw` shader with the host's tables (see `images::DeviceImageBatcher`).
///
///     vulkan::AugmentingImageBatcher batcher{.augmentation = ..., .normalization = ...};
///     auto loader = DataLoaderBuilder<vulkan::Backend, vulkan::AugmentingImageBatcher>(batcher)
///                       .batch_size(64).num_workers(4).build(dataset);
using AugmentingImageBatcher = images::DeviceImageBatcher<detail::VulkanRows>;

}  // namespace stoke::vulkan

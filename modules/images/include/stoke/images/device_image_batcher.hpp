#pragma once
/// @file
/// `images::DeviceImageBatcher`: the augmenting image batcher whose rows are rendered on the
/// host as bytes, straight into the staging memory of their upload, and flipped and normalised
/// on the device, so a quarter of the bytes of a float batch cross the bus. The host half is
/// here, shared by every backend; a backend's half (`vulkan::AugmentingImageBatcher`,
/// `cuda::AugmentingImageBatcher`) uploads the staging memory and runs its kernel.

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <span>
#include <utility>
#include <vector>

#include <stoke/core/rng.hpp>
#include <stoke/data/replaced_samples.hpp>
#include <stoke/images/augment_draw.hpp>
#include <stoke/images/augmentation.hpp>
#include <stoke/images/bad_samples.hpp>
#include <stoke/images/detail/image_rows.hpp>
#include <stoke/images/image.hpp>
#include <stoke/images/normalization.hpp>
#include <stoke/images/prepared_image.hpp>
#include <stoke/images/render.hpp>
#include <stoke/images/render_row.hpp>

namespace stoke::images {

namespace detail {

/// Where a batch of rendered rows lies in the staging memory of its upload: the rows' HWC
/// bytes one after the other from offset 0, zero bytes up to `flips_offset` (a multiple of
/// `alignment`), then one `uint32` a row, 1 where the row is to be mirrored and 0 elsewhere.
/// A device makes float `((n * C + c) * H + y) * W + x` of the batch from byte
/// `((n * H + y) * W + x') * C + c`, `x' = W - 1 - x` where row `n` flips, as
/// `normalization.table(c)[byte]`: what `normalize_into` computes on the host.
struct StagedRows {
  /// The alignment of the flips (and of a device's allocations): they can be read as words.
  static constexpr std::size_t alignment = 16;

  std::size_t rows = 0;          ///< images in the batch
  ImageShape shape{};            ///< one rendered image (HWC)
  std::size_t flips_offset = 0;  ///< byte offset of the flips
  std::size_t bytes = 0;         ///< bytes uploaded: pixels, padding and flips

  /// The layout of `rows` images of `shape`.
  [[nodiscard]] static StagedRows of(std::size_t rows, ImageShape shape) noexcept {
    const std::size_t pixels = rows * shape.bytes();
    const std::size_t flips = (pixels + alignment - 1) / alignment * alignment;
    return {rows, shape, flips, flips + rows * sizeof(std::uint32_t)};
  }

  /// Values of one row of the batch (`height * width * channels`).
  [[nodiscard]] std::size_t row_size() const noexcept { return shape.bytes(); }
  /// Values of the batch, and bytes of its pixels.
  [[nodiscard]] std::size_t values() const noexcept { return rows * row_size(); }
};

}  // namespace detail

/// Batches `EncodedImage`s on a device of the backend `DeviceHalf` stands for: each row is
/// its sample decoded and augmented with the sample's own stream, as `ImageBatcher` does, but
/// rendered to HWC bytes (`render_row_bytes`) straight into the staging memory of the
/// upload, with one flip flag a row; the device mirrors and normalises them into the CHW
/// float rows, looking the values up in the tables of `normalization`, so the batch equals
/// `ImageBatcher`'s bit for bit with a quarter of its bytes crossing the bus. `batch` returns
/// once the work is queued; the batch's `ready` fence signals when `inputs` holds the values
/// and `device_labels` the labels.
///
/// The bad-sample policy, the log and the refusals (a label above `INT32_MAX`, a sample that
/// fails to decode) are `ImageBatcher`'s; a normalisation of other channels than `decoding`
/// throws `UsageError`. Copies share the log and the per-device `resources`; thread-safe.
///
/// `DeviceHalf` provides `Device`, `Batch` (with `inputs`, `labels`, `rows`, `row_size`,
/// `ready`, `device_labels`), `Resources` (made from a count of staging buffers), `name`, and
/// `run(resources, device, layout, normalization, fill, labels)`, which calls `fill(staging)`
/// on the `layout.bytes` bytes of staging memory, uploads them and then `labels` (final once
/// `fill` returned), queues the kernel after both and returns the batch without its host
/// labels.
template <class DeviceHalf>
struct DeviceImageBatcher {
  /// A device batches are made for.
  using Device = typename DeviceHalf::Device;
  /// What `batch` returns.
  using Batch = typename DeviceHalf::Batch;
  /// The per-device stagers and kernels.
  using Resources = typename DeviceHalf::Resources;
  /// Staging buffers a device gets by default. Each holds a batch while its rows render,
  /// so a loader with more workers than this makes them wait: give `resources` more.
  static constexpr std::size_t default_staging_slots = 4;

  Augmentation augmentation;           ///< what each sample is drawn and rendered with
  Normalization normalization;         ///< per-channel mean and std
  PrepareOptions decoding{};           ///< channels, reduced-size decoding
  BadSamplePolicy bad_samples{};       ///< what a sample that fails to decode does
  std::shared_ptr<BadSampleLog> log =  ///< the replaced samples, shared with copies
      std::make_shared<BadSampleLog>();
  std::shared_ptr<Resources> resources =  ///< per-device stagers and kernels, shared with copies
      std::make_shared<Resources>(default_staging_slots);

  /// The distinct samples replaced in `epoch` in this process (`ReplacingBatcher`).
  [[nodiscard]] std::size_t replaced_samples(std::size_t epoch) const { return log->count(epoch); }

  /// The shape of one rendered image (HWC; a row holds it as CHW floats).
  [[nodiscard]] ImageShape output_shape() const noexcept {
    return {augmentation.height(), augmentation.width(), decoding.channels};
  }

  /// The batch of `items`, on `device`. Runs inside a loader's `batch` (it reads the
  /// loader's sample context).
  [[nodiscard]] Batch batch(std::vector<EncodedImage> items, const Device& device) const {
    const ImageShape out = output_shape();
    detail::check_normalization(DeviceHalf::name, out, normalization);
    std::vector<std::int32_t> labels = detail::image_labels(DeviceHalf::name, items);
    const detail::StagedRows layout = detail::StagedRows::of(items.size(), out);
    Batch made = DeviceHalf::run(
        *resources, device, layout, normalization,
        [&](std::span<std::byte> staging) { stage_rows(items, layout, labels, staging); },
        std::span<const std::int32_t>(labels));
    made.labels = std::move(labels);
    return made;
  }

 private:
  /// Renders the rows of `items` into `staging` as `layout` says, replacing bad samples as
  /// `bad_samples` allows (and their labels in `labels`).
  void stage_rows(std::span<const EncodedImage> items, const detail::StagedRows& layout,
                  std::span<std::int32_t> labels, std::span<std::byte> staging) const {
    auto* const base = reinterpret_cast<std::uint8_t*>(staging.data());
    const std::size_t row_bytes = layout.row_size();
    if (layout.flips_offset > layout.values()) {
      std::memset(base + layout.values(), 0, layout.flips_offset - layout.values());
    }
    detail::fill_image_rows(
        items, 0, layout.rows, bad_samples, *log, labels,
        [&](std::size_t row, const EncodedImage& item, SampleRng rng) {
          const AugmentDraw draw =
              render_row_bytes(item, augmentation, decoding, rng,
                               std::span<std::uint8_t>(base + row * row_bytes, row_bytes));
          const std::uint32_t flip = draw.flip ? 1 : 0;
          std::memcpy(base + layout.flips_offset + row * sizeof(flip), &flip, sizeof(flip));
        });
  }
};

}  // namespace stoke::images

#pragma once
/// @file
/// `images::ImageBatcher`: encoded images (JPEG, PNG) to an augmented, normalised float batch
/// on the CPU, each image decoded, cropped, resized, flipped and normalised straight into its
/// row of the batch.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <utility>
#include <vector>

#include <stoke/core/buffer_pool.hpp>
#include <stoke/core/host_device.hpp>
#include <stoke/core/rng.hpp>
#include <stoke/data/classification_batch.hpp>
#include <stoke/data/host_tensor.hpp>
#include <stoke/data/replaced_samples.hpp>
#include <stoke/images/augmentation.hpp>
#include <stoke/images/bad_samples.hpp>
#include <stoke/images/detail/image_rows.hpp>
#include <stoke/images/image.hpp>
#include <stoke/images/normalization.hpp>
#include <stoke/images/prepared_image.hpp>
#include <stoke/images/render.hpp>
#include <stoke/images/render_row.hpp>

namespace stoke::images {

/// Batches `EncodedImage`s into a `ClassificationBatch`: `inputs` has shape
/// `{n, channels * height * width}`, each row an image in CHW order, augmented by
/// `augmentation` with the sample's own random stream (`sample_rng`) and normalised per
/// channel; `labels` holds the classes. A batch can also be made in chunks on several threads
/// (`begin_batch`: a `ChunkedBatcher`), so the first batch of an epoch decodes on every idle
/// worker.
///
/// A sample that fails to decode throws `InputError` naming its file and the decoder's
/// message, unless `bad_samples` allows some: then it is replaced and logged in `log` (see
/// `BadSamplePolicy`). Without colour jitter a row is rendered in one pass from the decoded
/// pixels (crop, resize, flip and normalise); with it, through a byte image first.
struct ImageBatcher {
  Augmentation augmentation;           ///< what each sample is drawn and rendered with
  Normalization normalization;         ///< per-channel mean and std
  PrepareOptions decoding{};           ///< channels, reduced-size decoding
  BadSamplePolicy bad_samples{};       ///< what a sample that fails to decode does
  std::shared_ptr<BadSampleLog> log =  ///< the replaced samples, shared with copies
      std::make_shared<BadSampleLog>();
  BufferPool pool{};  ///< where the storage of `inputs` comes from

  /// A batch being filled in chunks (`fill` on disjoint rows from several threads at once).
  class Pending {
   public:
    /// Checks the labels of `items` and allocates the uninitialised batch.
    Pending(const ImageBatcher& batcher, std::vector<EncodedImage> items, const HostDevice& device)
        : batcher_(&batcher), items_(std::move(items)) {
      const ImageShape out = batcher.output_shape();
      out_ = ClassificationBatch{
          HostTensor<float>::uninitialized({items_.size(), out.bytes()}, device, batcher.pool),
          detail::image_labels("images::ImageBatcher", items_)};
    }

    /// Number of rows: one per image.
    [[nodiscard]] std::size_t rows() const noexcept { return items_.size(); }

    /// Decodes and renders the images of rows `[first, last)`.
    void fill(std::size_t first, std::size_t last) {
      detail::fill_image_rows(items_, first, last, batcher_->bad_samples, *batcher_->log,
                              out_.labels,
                              [this](std::size_t row, const EncodedImage& item, SampleRng rng) {
                                batcher_->render_row(item, rng, out_.inputs.row(row));
                              });
    }

    /// The batch, once every row was filled.
    [[nodiscard]] ClassificationBatch finish() && { return std::move(out_); }

   private:
    const ImageBatcher* batcher_;
    std::vector<EncodedImage> items_;
    ClassificationBatch out_;
  };

  /// The distinct samples replaced in `epoch` in this process (`ReplacingBatcher`).
  [[nodiscard]] std::size_t replaced_samples(std::size_t epoch) const { return log->count(epoch); }

  /// The shape of one rendered image (HWC; a row holds it as CHW floats).
  [[nodiscard]] ImageShape output_shape() const noexcept {
    return {augmentation.height(), augmentation.width(), decoding.channels};
  }

  /// The batch of `items`, on `device`.
  [[nodiscard]] ClassificationBatch batch(std::vector<EncodedImage> items,
                                          const HostDevice& device) const {
    Pending pending = begin_batch(std::move(items), device);
    pending.fill(0, pending.rows());
    return std::move(pending).finish();
  }

  /// The batch of `items`, checked and allocated on `device`, to be filled in chunks.
  [[nodiscard]] Pending begin_batch(std::vector<EncodedImage> items,
                                    const HostDevice& device) const {
    return {*this, std::move(items), device};
  }

  /// Decodes `item`, draws its augmentation from `rng` and writes it, normalised, to `row`.
  void render_row(const EncodedImage& item, SampleRng rng, std::span<float> row) const {
    const ImageShape out = output_shape();
    if (augmentation.has_color_jitter()) {
      thread_local std::vector<std::uint8_t> rendered;
      rendered.resize(out.bytes());
      const AugmentDraw draw = render_row_bytes(item, augmentation, decoding, rng, rendered);
      normalize_into(ImageView{rendered, out}, draw.flip, normalization, row);
    } else {
      const PreparedImage prepared =
          prepare_image(item, augmentation, decoding, rng, detail::thread_decode_scratch());
      render_normalized(prepared.image, prepared.draw, out, normalization, row);
    }
  }
};

static_assert(ReplacingBatcher<ImageBatcher>);

}  // namespace stoke::images

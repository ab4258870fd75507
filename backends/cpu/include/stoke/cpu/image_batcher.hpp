#pragma once
/// @file
/// `cpu::ImageBatcher`: labelled byte images to a normalised float batch on the CPU.

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <stoke/core/error.hpp>
#include <stoke/cpu/buffer_pool.hpp>
#include <stoke/cpu/classification.hpp>
#include <stoke/cpu/device.hpp>
#include <stoke/cpu/tensor.hpp>
#include <stoke/data/image_batch_checks.hpp>
#include <stoke/data/normalization_table.hpp>

namespace stoke::cpu {

/// A `ClassificationBatch` being filled image by image (see `ChunkedBatcher`): `fill` may run
/// on several threads at once for disjoint rows.
class PendingClassification {
 public:
  /// Checks the normalisation, the pixel counts and the labels (an `InputError` names what
  /// is wrong), writes the labels and allocates the uninitialised inputs.
  PendingClassification(std::vector<LabeledImage> items, float mean, float std,
                        const Device& device, const BufferPool& pool)
      : items_(std::move(items)) {
    stoke::check_image_normalization("ImageBatcher", mean, std);
    // One float per byte value, computed with the exact formula, then looked up per pixel.
    table_ = stoke::normalization_table(mean, std);
    const std::size_t pixels = stoke::image_batch_pixels(items_);
    out_ = ClassificationBatch{Tensor<float>::uninitialized({items_.size(), pixels}, device, pool),
                               stoke::image_batch_labels("ImageBatcher", items_)};
  }

  /// Number of rows: one per image.
  [[nodiscard]] std::size_t rows() const noexcept { return items_.size(); }

  /// Writes the normalised pixels of images `[first, last)`.
  void fill(std::size_t first, std::size_t last) {
    for (std::size_t i = first; i < last; ++i) {
      auto row = out_.inputs.row(i);
      for (std::size_t k = 0; k < row.size(); ++k) row[k] = table_[items_[i].pixels[k]];
    }
  }

  /// The batch, once every row was filled.
  [[nodiscard]] ClassificationBatch finish() && { return std::move(out_); }

 private:
  std::vector<LabeledImage> items_;
  std::array<float, 256> table_{};
  ClassificationBatch out_;
};

/// Batches `LabeledImage`s into a `ClassificationBatch` on the requested CPU device: `inputs`
/// has shape `{n, pixels}` with every pixel byte `b` mapped to `(b / 255 - mean) / std`, and
/// `labels` holds the classes as `int32`. A batch can also be made in chunks on several
/// threads (`begin_batch`, a `ChunkedBatcher`).
///
/// Images with a different pixel count than the first, or a label above `INT32_MAX`, are
/// refused with an `InputError` naming the item; so is a `std` that is zero or not finite.
/// The storage of `inputs` comes from `pool`, shared by copies of the batcher, and is recycled
/// once the batch is destroyed.
struct ImageBatcher {
  float mean = 0.0F;  ///< subtracted after scaling bytes to [0, 1]
  float std = 1.0F;   ///< then divided by
  BufferPool pool{};  ///< where the storage of `inputs` comes from, shared with copies

  /// The batch of `items`, on `device`.
  ClassificationBatch batch(std::vector<LabeledImage> items, const Device& device) const {
    PendingClassification pending = begin_batch(std::move(items), device);
    pending.fill(0, pending.rows());
    return std::move(pending).finish();
  }

  /// The batch of `items`, checked and allocated on `device`, to be filled in chunks.
  PendingClassification begin_batch(std::vector<LabeledImage> items, const Device& device) const {
    return {std::move(items), mean, std, device, pool};
  }
};

}  // namespace stoke::cpu

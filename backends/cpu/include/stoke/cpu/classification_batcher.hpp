#pragma once
/// @file
/// `cpu::ClassificationBatcher`: labelled byte images to a normalised float batch on the CPU.

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <stoke/core/error.hpp>
#include <stoke/cpu/buffer_pool.hpp>
#include <stoke/cpu/classification.hpp>
#include <stoke/cpu/device.hpp>
#include <stoke/cpu/tensor.hpp>
#include <stoke/data/detail/image_batch_checks.hpp>

namespace stoke::cpu {

/// Batches `LabeledImage`s into a `ClassificationBatch` on the requested CPU device: `inputs`
/// has shape `{n, pixels}` with every pixel byte `b` mapped to `(b / 255 - mean) / std`, and
/// `labels` holds the classes as `int32`.
///
/// Images with a different pixel count than the first, or a label above `INT32_MAX`, are
/// refused with an `InputError` naming the item; so is a `std` that is zero or not finite.
/// The storage of `inputs` comes from `pool`, shared by copies of the batcher, and is recycled
/// once the batch is destroyed.
struct ClassificationBatcher {
  float mean = 0.0F;  ///< subtracted after scaling bytes to [0, 1]
  float std = 1.0F;   ///< then divided by
  BufferPool pool{};  ///< where the storage of `inputs` comes from, shared with copies

  /// The batch of `items`, on `device`.
  ClassificationBatch batch(std::vector<LabeledImage> items, const Device& device) const {
    stoke::detail::check_image_normalization("ClassificationBatcher", mean, std);
    // One float per byte value, computed with the exact formula, then looked up per pixel.
    std::array<float, 256> table{};
    for (std::size_t value = 0; value < table.size(); ++value) {
      table[value] = (static_cast<float>(value) / 255.0F - mean) / std;
    }
    const std::size_t pixels = stoke::detail::image_batch_pixels(items);
    ClassificationBatch out{Tensor<float>::uninitialized({items.size(), pixels}, device, pool),
                            stoke::detail::image_batch_labels("ClassificationBatcher", items)};
    for (std::size_t i = 0; i < items.size(); ++i) {
      auto row = out.inputs.row(i);
      for (std::size_t k = 0; k < pixels; ++k) row[k] = table[items[i].pixels[k]];
    }
    return out;
  }
};

}  // namespace stoke::cpu

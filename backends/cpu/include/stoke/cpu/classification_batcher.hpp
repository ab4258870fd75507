#pragma once
/// @file
/// `cpu::ClassificationBatcher`: labelled byte images to a normalised float batch on the CPU.

#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include <stoke/core/error.hpp>
#include <stoke/cpu/buffer_pool.hpp>
#include <stoke/cpu/classification.hpp>
#include <stoke/cpu/device.hpp>
#include <stoke/cpu/tensor.hpp>

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
    if (std == 0.0F || !std::isfinite(std) || !std::isfinite(mean)) {
      throw InputError("stoke: ClassificationBatcher: mean " + std::to_string(mean) + " and std " +
                       std::to_string(std) + " must be finite, and std non-zero");
    }
    // One float per byte value, computed with the exact formula, then looked up per pixel.
    std::array<float, 256> table{};
    for (std::size_t value = 0; value < table.size(); ++value) {
      table[value] = (static_cast<float>(value) / 255.0F - mean) / std;
    }
    const std::size_t pixels = items.empty() ? 0 : items.front().pixels.size();
    ClassificationBatch out{Tensor<float>::uninitialized({items.size(), pixels}, device, pool), {}};
    out.labels.reserve(items.size());
    for (std::size_t i = 0; i < items.size(); ++i) {
      const LabeledImage& item = items[i];
      if (item.pixels.size() != pixels) {
        throw InputError("stoke: ClassificationBatcher: item " + std::to_string(i) +
                         " of the batch has " + std::to_string(item.pixels.size()) +
                         " pixels, item 0 has " + std::to_string(pixels));
      }
      if (item.label > static_cast<std::uint32_t>(std::numeric_limits<std::int32_t>::max())) {
        throw InputError("stoke: ClassificationBatcher: item " + std::to_string(i) +
                         " of the batch has label " + std::to_string(item.label) +
                         ", which does not fit in int32");
      }
      auto row = out.inputs.row(i);
      for (std::size_t k = 0; k < pixels; ++k) row[k] = table[item.pixels[k]];
      out.labels.push_back(static_cast<std::int32_t>(item.label));
    }
    return out;
  }
};

}  // namespace stoke::cpu

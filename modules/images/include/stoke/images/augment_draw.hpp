#pragma once
/// @file
/// What an augmentation draws for one sample (`AugmentDraw`: the crop box, the flip and the
/// colour factors), and the box carried over to an image decoded at a reduced size.

#include <cstdint>
#include <string>

#include <stoke/core/error.hpp>
#include <stoke/images/image.hpp>

namespace stoke::images {

/// Where in the source the output is taken from, in source pixels (fractional allowed): the
/// rows `[top, top + height)` and the columns `[left, left + width)`.
struct CropBox {
  float top = 0.0F;     ///< first row
  float left = 0.0F;    ///< first column
  float height = 0.0F;  ///< rows
  float width = 0.0F;   ///< columns

  friend constexpr bool operator==(const CropBox&, const CropBox&) = default;
};

/// Everything drawn for one sample (see `Augmentation::draw`). A factor of exactly 1 leaves
/// the image as it is.
struct AugmentDraw {
  CropBox box;              ///< the part of the source that is resampled to the output size
  bool flip = false;        ///< mirror the output left to right
  float brightness = 1.0F;  ///< brightness factor (0 black, 1 unchanged)
  float contrast = 1.0F;    ///< contrast factor (0 the mean grey, 1 unchanged)
  float saturation = 1.0F;  ///< saturation factor (0 grey, 1 unchanged)

  /// Whether any colour factor changes the image (so it cannot be rendered in one pass).
  [[nodiscard]] constexpr bool has_color_jitter() const noexcept {
    return brightness != 1.0F || contrast != 1.0F || saturation != 1.0F;
  }
  friend constexpr bool operator==(const AugmentDraw&, const AugmentDraw&) = default;
};

/// The same box in the pixels of the image decoded at a reduced size (JPEG DCT scaling):
/// rows scaled by `decoded.height / original.height`, columns by
/// `decoded.width / original.width` (computed in double, rounded once to float). Throws
/// `UsageError` when a size of `original` is zero.
[[nodiscard]] inline CropBox scaled_box(CropBox box, ImageShape original, ImageShape decoded) {
  if (original.height == 0 || original.width == 0) {
    throw UsageError("stoke: scaled_box: the original image is " + std::to_string(original.height) +
                     "x" + std::to_string(original.width) + ", it must have pixels");
  }
  const double rows = static_cast<double>(decoded.height) / original.height;
  const double columns = static_cast<double>(decoded.width) / original.width;
  return {static_cast<float>(box.top * rows), static_cast<float>(box.left * columns),
          static_cast<float>(box.height * rows), static_cast<float>(box.width * columns)};
}

}  // namespace stoke::images

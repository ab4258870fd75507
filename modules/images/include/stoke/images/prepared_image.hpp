#pragma once
/// @file
/// The first half of every image batcher's row: read the header, draw the sample's
/// augmentation from its own random stream, and decode, at a reduced size when the crop is
/// small enough (JPEG DCT scaling), into scratch memory of the calling thread.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include <stoke/core/rng.hpp>
#include <stoke/images/augmentation.hpp>
#include <stoke/images/decode.hpp>
#include <stoke/images/image.hpp>

namespace stoke::images {

/// A decoded image with the augmentation drawn for it, its box in the decoded pixels.
struct PreparedImage {
  ImageView image;   ///< the decoded pixels (in the thread's scratch memory)
  AugmentDraw draw;  ///< what to render from them
};

/// How the first half of a row decodes.
struct PrepareOptions {
  std::uint32_t channels = 3;  ///< 1 (grey) or 3 (RGB)
  bool reduced_decode = true;  ///< decode JPEGs at the smallest DCT scale that keeps the crop
                               ///< at least the output size (faster; pixels differ slightly)
};

namespace detail {

/// The smallest decoded extent of a side of `source` pixels whose crop of `box` pixels
/// keeps at least `out` pixels.
inline std::uint32_t min_decoded_extent(std::uint32_t source, float box, std::uint32_t out) {
  if (box <= 0.0F) return source;
  const double needed = std::ceil(static_cast<double>(source) * out / box);
  return static_cast<std::uint32_t>(std::min<double>(needed, source));
}

}  // namespace detail

/// Reads `item`'s header, draws `augmentation` from `rng`, and decodes `item` into `scratch`
/// (resized as needed). Throws `InputError` naming `item.source` if it cannot be decoded.
inline PreparedImage prepare_image(const EncodedImage& item, const Augmentation& augmentation,
                                   const PrepareOptions& options, SampleRng& rng,
                                   std::vector<std::uint8_t>& scratch) {
  const EncodedInfo info = read_image_info(item.bytes, item.source);
  AugmentDraw draw = augmentation.draw(info.height, info.width, rng);
  std::uint32_t min_height = info.height;
  std::uint32_t min_width = info.width;
  if (options.reduced_decode) {
    min_height = detail::min_decoded_extent(info.height, draw.box.height, augmentation.height());
    min_width = detail::min_decoded_extent(info.width, draw.box.width, augmentation.width());
  }
  const ImageShape shape = decoded_shape(info, options.channels, min_height, min_width);
  scratch.resize(shape.bytes());
  decode_into(item.bytes, item.source, shape, scratch);
  const ImageShape original{info.height, info.width, options.channels};
  if (shape != original) draw.box = scaled_box(draw.box, original, shape);
  return {ImageView{scratch, shape}, draw};
}

}  // namespace stoke::images

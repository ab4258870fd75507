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

/// What a row decodes: the header read, the augmentation drawn, the shape to decode at.
struct DecodePlan {
  ImageShape decoded;  ///< the shape `decode_into` is to give (reduced, when allowed)
  AugmentDraw draw;    ///< the draw, its box in the pixels of `decoded`
  EncodedInfo info;    ///< the header, so that decoding does not read it again
};

/// Reads `item`'s header and draws `augmentation` from `rng`; the shape to decode it at (the
/// smallest DCT scale that keeps the crop at least the output size, with
/// `options.reduced_decode`) and the draw in that shape's pixels. Throws `InputError` naming
/// `item.source` for a header that cannot be read.
inline DecodePlan plan_decode(const EncodedImage& item, const Augmentation& augmentation,
                              const PrepareOptions& options, SampleRng& rng) {
  const EncodedInfo info = read_image_info(item.bytes, item.source);
  AugmentDraw draw = augmentation.draw(info.height, info.width, rng);
  std::uint32_t min_height = info.height;
  std::uint32_t min_width = info.width;
  if (options.reduced_decode) {
    min_height = detail::min_decoded_extent(info.height, draw.box.height, augmentation.height());
    min_width = detail::min_decoded_extent(info.width, draw.box.width, augmentation.width());
  }
  const ImageShape shape = decoded_shape(info, options.channels, min_height, min_width);
  const ImageShape original{info.height, info.width, options.channels};
  if (shape != original) draw.box = scaled_box(draw.box, original, shape);
  return {shape, draw, info};
}

/// Whether rendering `draw` into `out` is a copy of the decoded image: the box is the whole of
/// an image already of the output shape, and no colour jitter applies. The bytes can then be
/// decoded straight into the output.
[[nodiscard]] inline bool renders_as_decoded(const DecodePlan& plan, ImageShape out) noexcept {
  const CropBox& box = plan.draw.box;
  return plan.decoded == out && box.top == 0.0F && box.left == 0.0F &&
         box.height == static_cast<float>(out.height) &&
         box.width == static_cast<float>(out.width) && !plan.draw.has_color_jitter();
}

/// Reads `item`'s header, draws `augmentation` from `rng` and decodes `item` into `scratch`
/// (resized as needed), as `plan_decode` plans. Throws `InputError` naming `item.source` if it
/// cannot be decoded.
inline PreparedImage prepare_image(const EncodedImage& item, const Augmentation& augmentation,
                                   const PrepareOptions& options, SampleRng& rng,
                                   std::vector<std::uint8_t>& scratch) {
  const DecodePlan plan = plan_decode(item, augmentation, options, rng);
  scratch.resize(plan.decoded.bytes());
  decode_into(item.bytes, item.source, plan.info, plan.decoded, scratch);
  return {ImageView{scratch, plan.decoded}, plan.draw};
}

}  // namespace stoke::images

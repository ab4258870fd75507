#pragma once
/// @file
/// The first half of every image batcher's row: read the header, draw the sample's
/// augmentation from its own random stream, and decode, at a reduced size when the crop is
/// small enough (JPEG DCT scaling) and only the region the crop reads (JPEG), into scratch
/// memory of the calling thread.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include <stoke/core/rng.hpp>
#include <stoke/images/augmentation.hpp>
#include <stoke/images/decode.hpp>
#include <stoke/images/detail/bilinear.hpp>
#include <stoke/images/detail/image_region.hpp>
#include <stoke/images/image.hpp>

namespace stoke::images {

/// A decoded image (or the region of it that the draw reads) with the augmentation drawn for
/// it, its box in the pixels of the whole decoded image.
struct PreparedImage {
  RegionView image;  ///< the decoded pixels (in the thread's scratch memory)
  AugmentDraw draw;  ///< what to render from them
};

/// How the first half of a row decodes.
struct PrepareOptions {
  std::uint32_t channels = 3;  ///< 1 (grey) or 3 (RGB)
  bool reduced_decode = true;  ///< decode JPEGs at the smallest DCT scale that keeps the crop
                               ///< at least the output size (faster; pixels differ slightly)
  bool region_decode = true;   ///< decode only the rows and columns of a JPEG the crop reads
                               ///< (faster; the rendered pixels are the same, see
                               ///< `decode_jpeg_region`)
  /// The old name of `region_decode`, kept so that code written against it compiles: false
  /// turns the region decode off too. New code uses `region_decode`.
  bool window_decode = true;
};

namespace detail {

/// The columns a region decode adds on each side of those the crop reads. Rows need none: a
/// region's rows equal the full decode's (`jpeg_skip_scanlines` keeps the upsampling's
/// context rows, and the rows below the last one read are still read ahead for it). Columns
/// do: libjpeg's fancy upsampling of horizontally subsampled chroma (4:2:0, 4:2:2) has no
/// chroma neighbour past a region's left or right edge and repeats the edge sample, so a
/// region's outermost columns may differ from the full decode's (by up to 53 on the tests'
/// images). One column more on each side that is not the image's edge, and the bytes the
/// crop reads, so the rendered bytes, equal those of the full decode exactly (the tests check
/// it).
inline constexpr std::uint32_t region_column_margin = 1;

/// `region` grown by `region_column_margin` columns on each side, within an image of `shape`.
[[nodiscard]] inline PixelRegion with_margin(PixelRegion region, ImageShape shape) noexcept {
  const std::uint32_t left =
      region.left > region_column_margin ? region.left - region_column_margin : 0;
  const std::uint32_t right =
      std::min(region.left + region.width + region_column_margin, shape.width);
  return {region.top, left, region.height, right - left};
}

/// The smallest decoded extent of a side of `source` pixels whose crop of `box` pixels
/// keeps at least `out` pixels.
inline std::uint32_t min_decoded_extent(std::uint32_t source, float box, std::uint32_t out) {
  if (box <= 0.0F) return source;
  const double needed = std::ceil(static_cast<double>(source) * out / box);
  return static_cast<std::uint32_t>(std::min<double>(needed, source));
}

}  // namespace detail

/// What a row decodes: the header read, the augmentation drawn, the shape to decode at and the
/// region of it to decode.
struct DecodePlan {
  ImageShape decoded;  ///< the shape `decode_into` is to give (reduced, when allowed)
  AugmentDraw draw;    ///< the draw, its box in the pixels of `decoded`
  EncodedInfo info;    ///< the header, so that decoding does not read it again
  /// The rows and columns of `decoded` to decode: those the box reads and
  /// `region_column_margin` more columns on each side (with `PrepareOptions::region_decode`,
  /// for a JPEG), else the whole.
  PixelRegion region;
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
  PixelRegion region = PixelRegion::whole(shape);
  const CropBox& box = draw.box;
  if (options.region_decode && options.window_decode && info.format == ImageFormat::jpeg &&
      std::isfinite(box.top) && std::isfinite(box.left) && std::isfinite(box.height) &&
      std::isfinite(box.width) && box.height > 0.0F && box.width > 0.0F) {
    const ImageShape out{augmentation.height(), augmentation.width(), options.channels};
    region = detail::with_margin(detail::resampled_region(draw.box, shape, out), shape);
  }
  return {shape, draw, info, region};
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

/// Decodes what `plan` says of `item` (its region, `decode_region`) into `scratch` (resized
/// as needed). Throws `InputError` naming `item.source` if it cannot be decoded.
inline RegionView decode_planned(const EncodedImage& item, const DecodePlan& plan,
                                 std::vector<std::uint8_t>& scratch) {
  return decode_region(item.bytes, item.source, plan.info, plan.decoded, plan.region, scratch);
}

/// Reads `item`'s header, draws `augmentation` from `rng` and decodes `item` (the region the
/// draw reads) into `scratch` (resized as needed), as `plan_decode` plans. Throws `InputError`
/// naming `item.source` if it cannot be decoded.
inline PreparedImage prepare_image(const EncodedImage& item, const Augmentation& augmentation,
                                   const PrepareOptions& options, SampleRng& rng,
                                   std::vector<std::uint8_t>& scratch) {
  const DecodePlan plan = plan_decode(item, augmentation, options, rng);
  return {decode_planned(item, plan, scratch), plan.draw};
}

}  // namespace stoke::images

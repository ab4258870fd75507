#pragma once
/// @file
/// The second half of a sample's augmentation: resampling the drawn box to the output size
/// (`render`), flipping and normalising into CHW floats (`normalize_into`), or both in one
/// pass when there is no colour jitter (`render_normalized`), equal bit for bit to the two
/// passes because they share the row functions.

#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <stoke/core/error.hpp>
#include <stoke/images/augment_draw.hpp>
#include <stoke/images/color_jitter.hpp>
#include <stoke/images/detail/augment_checks.hpp>
#include <stoke/images/detail/bilinear.hpp>
#include <stoke/images/detail/image_region.hpp>
#include <stoke/images/image.hpp>
#include <stoke/images/normalization.hpp>

namespace stoke::images {

namespace detail {

/// `shape` as `HxWxC` for error messages.
[[nodiscard]] inline std::string format_shape(ImageShape shape) {
  return std::to_string(shape.height) + "x" + std::to_string(shape.width) + "x" +
         std::to_string(shape.channels);
}

/// Throws `UsageError` naming `call` unless `image` has pixels, 1 or 3 channels and the
/// bytes its shape says.
inline void check_image(std::string_view call, std::string_view what, ImageView image) {
  const ImageShape shape = image.shape;
  if (shape.height == 0 || shape.width == 0 || (shape.channels != 1 && shape.channels != 3) ||
      image.pixels.size() != shape.bytes()) {
    throw UsageError("stoke: " + std::string(call) + ": the " + std::string(what) + " is " +
                     format_shape(shape) + " with " + std::to_string(image.pixels.size()) +
                     " bytes (it needs pixels, 1 or 3 channels, and height x width x channels "
                     "bytes)");
  }
}

/// Throws `UsageError` naming `call` unless `draw` can be rendered from `source` to `out`
/// (`out_values` values in the destination).
inline void check_render(std::string_view call, RegionView view, const AugmentDraw& draw,
                         ImageShape out, std::size_t out_values) {
  const ImageView source = view.pixels;
  check_image(call, "source", source);
  if (out.height == 0 || out.width == 0 || out.channels != source.shape.channels) {
    throw UsageError("stoke: " + std::string(call) + ": output " + format_shape(out) + " for a " +
                     format_shape(source.shape) +
                     " source (it needs pixels and the source's channels)");
  }
  if (out_values != out.bytes()) {
    throw UsageError("stoke: " + std::string(call) + ": " + std::to_string(out_values) +
                     " values for a " + format_shape(out) + " output");
  }
  const CropBox& box = draw.box;
  if (!std::isfinite(box.top) || !std::isfinite(box.left) || !(box.height > 0.0F) ||
      !(box.width > 0.0F) || !std::isfinite(box.height) || !std::isfinite(box.width)) {
    throw UsageError("stoke: " + std::string(call) + ": crop box (top " + format_value(box.top) +
                     ", left " + format_value(box.left) + ", height " + format_value(box.height) +
                     ", width " + format_value(box.width) +
                     ") must be finite with a positive height and width");
  }
  if (view.whole.channels != source.shape.channels || view.whole.height == 0 ||
      view.whole.width == 0) {
    throw UsageError("stoke: " + std::string(call) + ": a " + format_shape(source.shape) +
                     " region of a " + format_shape(view.whole) + " image");
  }
  if (!view.region().is_whole(view.whole) || source.shape != view.whole) {
    const PixelRegion needed = resampled_region(box, view.whole, out);
    if (!view.region().contains(needed)) {
      throw UsageError(
          "stoke: " + std::string(call) + ": the region of " + format_shape(source.shape) +
          " at row " + std::to_string(view.top) + ", column " + std::to_string(view.left) +
          " of a " + format_shape(view.whole) + " image does not hold rows " +
          std::to_string(needed.top) + " to " + std::to_string(needed.top + needed.height - 1) +
          " and columns " + std::to_string(needed.left) + " to " +
          std::to_string(needed.left + needed.width - 1) + ", which the box reads");
    }
  }
}

/// Throws `UsageError` naming `call` unless `normalization` has the channels of `shape`.
inline void check_normalization(std::string_view call, ImageShape shape,
                                const Normalization& normalization) {
  if (normalization.channels() != shape.channels) {
    throw UsageError("stoke: " + std::string(call) + ": a normalisation of " +
                     std::to_string(normalization.channels()) + " channels for a " +
                     format_shape(shape) + " image");
  }
}

/// The scratch memory of the resampler, one per thread.
[[nodiscard]] inline BilinearScratch& thread_bilinear_scratch() {
  thread_local BilinearScratch scratch;
  return scratch;
}

/// Writes one HWC byte row of `width` pixels into row `y` of the CHW planes at `out`
/// (`plane` floats a channel), mirrored when `flip`, each byte `b` of channel `c` as
/// `tables[c][b]`.
template <std::uint32_t Channels>
void normalize_row(const std::uint8_t* row, std::uint32_t width, bool flip,
                   const std::array<const std::array<float, 256>*, 3>& tables, float* out,
                   std::size_t plane) {
  for (std::uint32_t c = 0; c < Channels; ++c) {
    const std::array<float, 256>& table = *tables[c];
    float* destination = out + c * plane;
    const std::uint8_t* bytes = row + c;
    if (flip) {
      for (std::uint32_t x = 0; x < width; ++x) {
        destination[width - 1 - x] = table[bytes[std::size_t{x} * Channels]];
      }
    } else {
      for (std::uint32_t x = 0; x < width; ++x) {
        destination[x] = table[bytes[std::size_t{x} * Channels]];
      }
    }
  }
}

/// Row `y` of an HWC byte image of `shape` flipped and normalised into the CHW floats `out`.
inline void normalize_image_row(const std::uint8_t* row, ImageShape shape, std::uint32_t y,
                                bool flip, const Normalization& normalization, float* out) {
  std::array<const std::array<float, 256>*, 3> tables{};
  for (std::uint32_t c = 0; c < shape.channels; ++c) tables[c] = &normalization.table(c);
  const std::size_t plane = std::size_t{shape.height} * shape.width;
  float* row_out = out + std::size_t{y} * shape.width;
  if (shape.channels == 3) {
    normalize_row<3>(row, shape.width, flip, tables, row_out, plane);
  } else {
    normalize_row<1>(row, shape.width, flip, tables, row_out, plane);
  }
}

}  // namespace detail

/// Resamples `draw.box` of `source` to `out.height` x `out.width` and applies the draw's
/// colour jitter (`apply_color_jitter`), writing HWC bytes to `out_hwc` WITHOUT flipping
/// (`normalize_into` flips). Bilinear (`detail::BilinearRows`): output pixel centres at +0.5
/// as OpenCV `INTER_LINEAR` and torchvision with `antialias=False`, sampling positions
/// clamped to the centres of the box's edge pixels and to the image (for a box of whole
/// pixels inside the image: cropping, then resizing), weights in 1/2048, each byte rounded
/// half up. The source may be a region of the image (`RegionView`, the box in the whole
/// image's pixels): the result is the same as from the whole image when the region holds
/// every pixel the box reads (`detail::resampled_region`). Throws `UsageError` when the source
/// is not 1 or 3 channels with pixels, `out` has other channels or no pixels, `out_hwc` is
/// not `out.bytes()` long, the box is not finite with positive sides, or a region does not
/// hold the pixels the box reads.
inline void render(RegionView source, const AugmentDraw& draw, ImageShape out,
                   std::span<std::uint8_t> out_hwc) {
  detail::check_render("render", source, draw, out, out_hwc.size());
  detail::BilinearRows rows(source, draw.box, out, detail::thread_bilinear_scratch());
  const std::size_t row_bytes = std::size_t{out.width} * out.channels;
  for (std::uint32_t y = 0; y < out.height; ++y) rows.row(y, out_hwc.data() + y * row_bytes);
  if (draw.has_color_jitter()) {
    apply_color_jitter(out, out_hwc, draw.brightness, draw.contrast, draw.saturation);
  }
}

/// `render` of the whole image `source`.
inline void render(ImageView source, const AugmentDraw& draw, ImageShape out,
                   std::span<std::uint8_t> out_hwc) {
  render(RegionView(source), draw, out, out_hwc);
}

/// Mirrors `rendered` left to right if `flip`, and normalises it into CHW floats: channel
/// `c` of pixel `(y, x)` goes to `out_chw[(c * height + y) * width + x']` as
/// `normalization.table(c)[byte]`, `x' = width - 1 - x` when flipping. What the device
/// kernels replicate. Throws `UsageError` unless `rendered` has pixels, 1 or 3 channels, the
/// bytes of its shape and the channels of `normalization`, and `out_chw` is as long.
inline void normalize_into(ImageView rendered, bool flip, const Normalization& normalization,
                           std::span<float> out_chw) {
  detail::check_image("normalize_into", "image", rendered);
  detail::check_normalization("normalize_into", rendered.shape, normalization);
  if (out_chw.size() != rendered.shape.bytes()) {
    throw UsageError("stoke: normalize_into: " + std::to_string(out_chw.size()) + " floats for a " +
                     detail::format_shape(rendered.shape) + " image");
  }
  const std::size_t row_bytes = std::size_t{rendered.shape.width} * rendered.shape.channels;
  for (std::uint32_t y = 0; y < rendered.shape.height; ++y) {
    detail::normalize_image_row(rendered.pixels.data() + y * row_bytes, rendered.shape, y, flip,
                                normalization, out_chw.data());
  }
}

/// `render` then `normalize_into` in one pass, row by row, without the byte image: equal to
/// them bit for bit (the same row functions). Only for a draw without colour jitter (whose
/// contrast needs the whole rendered image): throws `UsageError` otherwise, and for what
/// `render` and `normalize_into` refuse.
inline void render_normalized(RegionView source, const AugmentDraw& draw, ImageShape out,
                              const Normalization& normalization, std::span<float> out_chw) {
  detail::check_render("render_normalized", source, draw, out, out_chw.size());
  detail::check_normalization("render_normalized", out, normalization);
  if (draw.has_color_jitter()) {
    throw UsageError("stoke: render_normalized: the draw has colour jitter (brightness " +
                     detail::format_value(draw.brightness) + ", contrast " +
                     detail::format_value(draw.contrast) + ", saturation " +
                     detail::format_value(draw.saturation) + "); use render and normalize_into");
  }
  detail::BilinearScratch& scratch = detail::thread_bilinear_scratch();
  detail::BilinearRows rows(source, draw.box, out, scratch);
  thread_local std::vector<std::uint8_t> row;
  row.resize(std::size_t{out.width} * out.channels);
  for (std::uint32_t y = 0; y < out.height; ++y) {
    rows.row(y, row.data());
    detail::normalize_image_row(row.data(), out, y, draw.flip, normalization, out_chw.data());
  }
}

/// `render_normalized` of the whole image `source`.
inline void render_normalized(ImageView source, const AugmentDraw& draw, ImageShape out,
                              const Normalization& normalization, std::span<float> out_chw) {
  render_normalized(RegionView(source), draw, out, normalization, out_chw);
}

}  // namespace stoke::images

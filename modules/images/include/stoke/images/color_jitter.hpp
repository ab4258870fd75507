#pragma once
/// @file
/// Colour jitter applied to a rendered 8-bit image: brightness, contrast and saturation, in
/// that fixed order, as torchvision's `adjust_brightness`, `adjust_contrast` and
/// `adjust_saturation` on a uint8 image.

#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include <stoke/core/error.hpp>
#include <stoke/images/image.hpp>

namespace stoke::images {

namespace detail {

/// `value` as a byte: rounded half up, clamped to [0, 255].
[[nodiscard]] inline std::uint8_t to_byte(double value) noexcept {
  if (!(value > 0.0)) return 0;
  if (value >= 255.0) return 255;
  return static_cast<std::uint8_t>(std::floor(value + 0.5));
}

/// The grey of an RGB pixel, `0.299 R + 0.587 G + 0.114 B` (torchvision's `rgb_to_grayscale`,
/// ITU-R 601-2) as a byte rounded half up, computed exactly in integers.
[[nodiscard]] constexpr std::uint32_t grey(std::uint32_t r, std::uint32_t g,
                                           std::uint32_t b) noexcept {
  return (299 * r + 587 * g + 114 * b + 500) / 1000;
}

/// Every byte `v` of `pixels` replaced by `table[v]`.
inline void apply_table(std::span<std::uint8_t> pixels,
                        const std::array<std::uint8_t, 256>& table) noexcept {
  for (std::uint8_t& value : pixels) value = table[value];
}

/// The table of `v -> to_byte(factor * v + (1 - factor) * other)`.
[[nodiscard]] inline std::array<std::uint8_t, 256> blend_table(double factor,
                                                               double other) noexcept {
  std::array<std::uint8_t, 256> table{};
  for (std::size_t v = 0; v < table.size(); ++v) {
    table[v] = to_byte(factor * static_cast<double>(v) + (1.0 - factor) * other);
  }
  return table;
}

/// The mean grey of `pixels` (the grey of each pixel as `grey`, the byte itself for 1
/// channel), summed exactly in integers.
[[nodiscard]] inline double mean_grey(std::span<const std::uint8_t> pixels,
                                      std::uint32_t channels) noexcept {
  std::uint64_t sum = 0;
  if (channels == 3) {
    for (std::size_t i = 0; i + 2 < pixels.size(); i += 3) {
      sum += grey(pixels[i], pixels[i + 1], pixels[i + 2]);
    }
  } else {
    for (std::uint8_t value : pixels) sum += value;
  }
  const std::size_t count = pixels.size() / channels;
  return count == 0 ? 0.0 : static_cast<double>(sum) / static_cast<double>(count);
}

}  // namespace detail

/// Jitters the colours of an HWC image in place (`pixels` of `shape`, 1 or 3 channels), each
/// adjustment on the bytes the previous one left, all arithmetic in double and every result a byte
/// rounded half up and clamped to [0, 255] (`detail::to_byte`):
/// 1. brightness `b`: `v -> b * v` (a blend with black);
/// 2. contrast `c`: `v -> c * v + (1 - c) * m`, `m` the mean over the image of the pixels'
///    grey (`detail::grey`, a byte), as torchvision;
/// 3. saturation `s`, 3 channels only (a no-op on grey images): each channel
///    `v -> s * v + (1 - s) * g`, `g` the pixel's grey.
/// A factor of exactly 1 leaves the image unchanged (the adjustment is skipped). torchvision
/// truncates where this rounds, so bytes can differ from it by 1. Throws `UsageError` for a
/// channel count other than 1 or 3, or a byte count that does not match `shape`.
inline void apply_color_jitter(ImageShape shape, std::span<std::uint8_t> pixels, float brightness,
                               float contrast, float saturation) {
  if ((shape.channels != 1 && shape.channels != 3) || pixels.size() != shape.bytes()) {
    throw UsageError("stoke: apply_color_jitter: " + std::to_string(pixels.size()) +
                     " bytes for a " + std::to_string(shape.height) + "x" +
                     std::to_string(shape.width) + "x" + std::to_string(shape.channels) +
                     " image (1 or 3 channels)");
  }
  if (brightness != 1.0F) detail::apply_table(pixels, detail::blend_table(brightness, 0.0));
  if (contrast != 1.0F) {
    const double mean = detail::mean_grey(pixels, shape.channels);
    detail::apply_table(pixels, detail::blend_table(contrast, mean));
  }
  if (saturation != 1.0F && shape.channels == 3) {
    std::array<double, 256> kept{};  // s * v
    std::array<double, 256> grey{};  // (1 - s) * g
    for (std::size_t v = 0; v < kept.size(); ++v) {
      kept[v] = saturation * static_cast<double>(v);
      grey[v] = (1.0 - saturation) * static_cast<double>(v);
    }
    for (std::size_t i = 0; i + 2 < pixels.size(); i += 3) {
      const double g = grey[detail::grey(pixels[i], pixels[i + 1], pixels[i + 2])];
      for (std::size_t c = 0; c < 3; ++c) pixels[i + c] = detail::to_byte(kept[pixels[i + c]] + g);
    }
  }
}

}  // namespace stoke::images

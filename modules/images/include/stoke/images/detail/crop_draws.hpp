#pragma once
/// @file
/// The crop boxes of the geometric augmentations: torchvision's `RandomResizedCrop` draw and
/// the centre crop, both in whole source pixels.

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <string>

#include <stoke/core/error.hpp>
#include <stoke/core/rng.hpp>
#include <stoke/images/augment_draw.hpp>

namespace stoke::images::detail {

/// `x` rounded to the nearest integer, halves to the even one (Python's `round`), whatever
/// the floating-point rounding mode.
[[nodiscard]] inline double round_half_even(double x) noexcept {
  const double below = std::floor(x);
  const double fraction = x - below;
  if (fraction > 0.5) return below + 1.0;
  if (fraction < 0.5) return below;
  return std::fmod(below, 2.0) == 0.0 ? below : below + 1.0;
}

/// A uniform integer in `[0, n)` (`n > 0`) from one draw of `rng`: `floor(u * n)`.
[[nodiscard]] inline std::uint32_t uniform_below(SampleRng& rng, std::uint32_t n) noexcept {
  const double scaled = static_cast<double>(rng.uniform()) * n;  // exact: 24 bits times 32
  return std::min(n - 1, static_cast<std::uint32_t>(scaled));
}

/// torchvision's `RandomResizedCrop.get_params` on a `height` x `width` source: up to 10
/// attempts, each drawing the area fraction uniform in `scale` and then the aspect ratio
/// (width / height) log-uniform in `ratio` (two draws); the sides are
/// `round(sqrt(area * ratio))` and `round(sqrt(area / ratio))` (halves to even), and the
/// first attempt that fits draws its top row and then its left column uniformly among the
/// positions that keep it inside (two more draws). When no attempt fits: the central crop of
/// the whole image, its aspect ratio clamped to `ratio` (a side at least 1 pixel), with no
/// further draw. Arguments are checked by the builder.
[[nodiscard]] inline CropBox random_resized_crop_box(std::uint32_t height, std::uint32_t width,
                                                     std::array<float, 2> scale,
                                                     std::array<float, 2> ratio, SampleRng& rng) {
  const double area = static_cast<double>(height) * width;
  const double log_low = std::log(static_cast<double>(ratio[0]));
  const double log_high = std::log(static_cast<double>(ratio[1]));
  for (int attempt = 0; attempt < 10; ++attempt) {
    const double fraction = scale[0] + (static_cast<double>(scale[1]) - scale[0]) * rng.uniform();
    const double aspect = std::exp(log_low + (log_high - log_low) * rng.uniform());
    const double target = area * fraction;
    const double w = round_half_even(std::sqrt(target * aspect));
    const double h = round_half_even(std::sqrt(target / aspect));
    if (w > 0.0 && w <= width && h > 0.0 && h <= height) {
      const auto rows = static_cast<std::uint32_t>(h);
      const auto columns = static_cast<std::uint32_t>(w);
      const std::uint32_t top = uniform_below(rng, height - rows + 1);
      const std::uint32_t left = uniform_below(rng, width - columns + 1);
      return {static_cast<float>(top), static_cast<float>(left), static_cast<float>(rows),
              static_cast<float>(columns)};
    }
  }
  const double in_ratio = static_cast<double>(width) / height;
  double w = width;
  double h = height;
  if (in_ratio < ratio[0]) {
    h = std::max(1.0, round_half_even(w / ratio[0]));
  } else if (in_ratio > ratio[1]) {
    w = std::max(1.0, round_half_even(h * ratio[1]));
  }
  return {static_cast<float>(std::floor((height - h) / 2.0)),
          static_cast<float>(std::floor((width - w) / 2.0)), static_cast<float>(h),
          static_cast<float>(w)};
}

/// The `height` x `width` box in the centre of a `source_height` x `source_width` source,
/// its offsets `round((source - size) / 2)` with halves to even (torchvision's
/// `center_crop`). Throws `InputError` naming both sizes when the box does not fit.
[[nodiscard]] inline CropBox center_crop_box(std::uint32_t source_height,
                                             std::uint32_t source_width, std::uint32_t height,
                                             std::uint32_t width) {
  if (height > source_height || width > source_width) {
    throw InputError("stoke: center_crop: the " + std::to_string(height) + "x" +
                     std::to_string(width) + " crop does not fit in the " +
                     std::to_string(source_height) + "x" + std::to_string(source_width) + " image");
  }
  return {static_cast<float>(round_half_even((source_height - height) / 2.0)),
          static_cast<float>(round_half_even((source_width - width) / 2.0)),
          static_cast<float>(height), static_cast<float>(width)};
}

}  // namespace stoke::images::detail

#pragma once
/// @file
/// Bilinear resampling of a box of an 8-bit HWC image, one output row at a time, in fixed
/// point: the taps of both axes are computed once per image, the horizontal pass of a source
/// row is kept for the next output row that needs it, and the inner loops run over
/// contiguous bytes without a division.

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <vector>

#include <stoke/images/augment_draw.hpp>
#include <stoke/images/detail/image_region.hpp>
#include <stoke/images/image.hpp>

namespace stoke::images::detail {

/// Bits of the fixed-point interpolation weights: a weight is a multiple of 1/2048 (as
/// OpenCV's `INTER_LINEAR`).
inline constexpr std::uint32_t kWeightBits = 11;
/// The weight 1 in fixed point.
inline constexpr std::uint32_t kWeightOne = 1U << kWeightBits;

/// One output position along an axis: the two source positions it blends and the weight of
/// the second, in 1/2048 (the first has `2048 - weight`).
struct Tap {
  std::uint32_t first = 0;   ///< source position (or its byte offset in a row)
  std::uint32_t second = 0;  ///< the next one, or `first` again at the last position
  std::uint32_t weight = 0;  ///< of `second`, in [0, 2048]
};

/// The taps of `count` outputs resampling `[start, start + extent)` of an axis of `size`
/// positions. Output `o` samples `s = start + (o + 0.5) * extent / count - 0.5` (pixel
/// centres at +0.5, as OpenCV `INTER_LINEAR` and torchvision with `antialias=False`), clamped
/// to the centres of the box's first and last pixels, `[start, start + extent - 1]`, and to
/// the image, `[0, size - 1]`; it blends `floor(s)` and the next position with the weight
/// `round_half_up((s - floor(s)) * 2048) / 2048`. All in double, once per image.
inline void axis_taps(double start, double extent, std::uint32_t count, std::uint32_t size,
                      std::vector<Tap>& taps) {
  const double step = extent / count;
  const double last = size - 1.0;
  const double low = std::clamp(start, 0.0, last);
  const double high = std::clamp(start + extent - 1.0, low, last);
  taps.resize(count);
  for (std::uint32_t o = 0; o < count; ++o) {
    const double s = std::clamp(start + (o + 0.5) * step - 0.5, low, high);
    const double below = std::floor(s);
    const auto first = static_cast<std::uint32_t>(below);
    const auto weight = static_cast<std::uint32_t>(std::floor((s - below) * kWeightOne + 0.5));
    taps[o] = {first, std::min(first + 1, size - 1), weight};
  }
}

/// The positions `[first, last]` of an axis of `size` that `axis_taps(start, extent, count,
/// size, ...)` reads (as `first` or as `second`, weighted or not): from `floor` of the lowest
/// sampling position to the one after `floor` of the highest, within the image. The same
/// double arithmetic as `axis_taps`, so no tap falls outside.
struct AxisSpan {
  std::uint32_t first = 0;  ///< the first position read
  std::uint32_t last = 0;   ///< the last position read
};
[[nodiscard]] inline AxisSpan axis_span(double start, double extent, std::uint32_t count,
                                        std::uint32_t size) {
  const double step = extent / count;
  const double last = size - 1.0;
  const double low = std::clamp(start, 0.0, last);
  const double high = std::clamp(start + extent - 1.0, low, last);
  const double lowest = std::clamp(start + 0.5 * step - 0.5, low, high);
  const double highest = std::clamp(start + (count - 0.5) * step - 0.5, low, high);
  const auto first = static_cast<std::uint32_t>(std::floor(lowest));
  const auto top = static_cast<std::uint32_t>(std::floor(highest));
  return {first, std::min(top + 1, size - 1)};
}

/// The memory a `BilinearRows` works in, kept by the calling thread between images.
struct BilinearScratch {
  std::vector<Tap> columns;            ///< per output column, byte offsets in a source row
  std::vector<Tap> rows;               ///< per output row, source rows
  std::vector<std::uint32_t> buffers;  ///< two horizontally resampled source rows
};

/// The rows and columns of an image of `whole` that resampling `box` to `out` reads
/// (`axis_span` of each axis): what a region decode must hold.
[[nodiscard]] inline PixelRegion resampled_region(const CropBox& box, ImageShape whole,
                                                  ImageShape out) {
  const AxisSpan rows = axis_span(box.top, box.height, out.height, whole.height);
  const AxisSpan columns = axis_span(box.left, box.width, out.width, whole.width);
  return {rows.first, columns.first, rows.last - rows.first + 1, columns.last - columns.first + 1};
}

/// The rows of `box` of `source` resampled to `out`: `row(y, bytes)` writes output row `y`
/// (`out.width * channels` bytes). A byte is the fixed-point blend
/// `((2048 - wy) * ((2048 - wx) * p00 + wx * p01) + wy * ((2048 - wx) * p10 + wx * p11))`,
/// exact in 32 bits, divided by 2^22 rounding half up (never outside [0, 255]). Channels 1
/// and 3; sizes and box checked by the caller. The box is in the pixels of the whole image;
/// the taps are computed there, then moved to the region's pixels, so a region holding every
/// pixel the taps read (`resampled_region`) renders exactly what the whole image does.
class BilinearRows {
 public:
  /// Prepares the taps of both axes (`scratch` must outlive this).
  BilinearRows(RegionView region, CropBox box, ImageShape out, BilinearScratch& scratch)
      : source_(region.pixels), out_(out), scratch_(scratch) {
    axis_taps(box.left, box.width, out.width, region.whole.width, scratch.columns);
    for (Tap& tap : scratch.columns) {
      tap.first = (tap.first - region.left) * source_.shape.channels;
      tap.second = (tap.second - region.left) * source_.shape.channels;
    }
    axis_taps(box.top, box.height, out.height, region.whole.height, scratch.rows);
    for (Tap& tap : scratch.rows) {
      tap.first -= region.top;
      tap.second -= region.top;
    }
    values_ = std::size_t{out.width} * out.channels;
    scratch.buffers.resize(2 * values_);
  }

  /// Writes output row `y` to `bytes` (`out.width * channels` of them).
  void row(std::uint32_t y, std::uint8_t* bytes) {
    const Tap tap = scratch_.rows[y];
    const std::size_t slot_first = horizontal(tap.first, kNoSlot);
    const std::size_t slot_second =
        tap.weight == 0 ? slot_first : horizontal(tap.second, slot_first);
    const std::uint32_t* first = scratch_.buffers.data() + slot_first * values_;
    const std::uint32_t* second = scratch_.buffers.data() + slot_second * values_;
    const std::uint32_t weight_second = tap.weight;
    const std::uint32_t weight_first = kWeightOne - tap.weight;
    constexpr std::uint32_t kHalf = 1U << (2 * kWeightBits - 1);
    const std::size_t count = values_;  // a local: byte stores may alias members
    for (std::size_t k = 0; k < count; ++k) {
      bytes[k] = static_cast<std::uint8_t>(
          (weight_first * first[k] + weight_second * second[k] + kHalf) >> (2 * kWeightBits));
    }
  }

 private:
  /// No slot (for `horizontal`'s `keep`).
  static constexpr std::size_t kNoSlot = 2;

  /// The slot (0 or 1) holding source row `y` resampled horizontally, computed into a slot
  /// other than `keep` unless it is there already.
  std::size_t horizontal(std::uint32_t y, std::size_t keep) {
    if (cached_[0] == y) return 0;
    if (cached_[1] == y) return 1;
    const std::size_t slot = keep == 0 ? 1 : 0;
    const std::uint8_t* source_row =
        source_.pixels.data() + std::size_t{y} * source_.shape.width * source_.shape.channels;
    std::uint32_t* values = scratch_.buffers.data() + slot * values_;
    if (source_.shape.channels == 3) {
      resample_row<3>(source_row, values);
    } else {
      resample_row<1>(source_row, values);
    }
    cached_[slot] = y;
    return slot;
  }

  template <std::uint32_t Channels>
  void resample_row(const std::uint8_t* source_row, std::uint32_t* values) const {
    const Tap* taps = scratch_.columns.data();
    const std::uint32_t width = out_.width;  // a local: stores may alias members
    for (std::uint32_t x = 0; x < width; ++x, values += Channels) {
      const std::uint8_t* a = source_row + taps[x].first;
      const std::uint8_t* b = source_row + taps[x].second;
      const std::uint32_t weight_b = taps[x].weight;
      const std::uint32_t weight_a = kWeightOne - weight_b;
      for (std::uint32_t c = 0; c < Channels; ++c) values[c] = weight_a * a[c] + weight_b * b[c];
    }
  }

  ImageView source_;
  ImageShape out_;
  BilinearScratch& scratch_;
  std::size_t values_ = 0;
  std::array<std::uint32_t, 2> cached_{UINT32_MAX, UINT32_MAX};
};

}  // namespace stoke::images::detail

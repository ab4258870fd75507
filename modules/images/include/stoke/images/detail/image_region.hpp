#pragma once
/// @file
/// A region of an image (`PixelRegion`: rows and columns) and the decoded pixels of such a
/// region with where they sit in the whole image (`RegionView`): what a region decode gives
/// and what rendering reads.

#include <cstdint>

#include <stoke/images/image.hpp>

namespace stoke::images {

/// The rows `[top, top + height)` and the columns `[left, left + width)` of an image.
struct PixelRegion {
  std::uint32_t top = 0;     ///< first row
  std::uint32_t left = 0;    ///< first column
  std::uint32_t height = 0;  ///< rows
  std::uint32_t width = 0;   ///< columns

  /// The whole of an image of `shape`.
  [[nodiscard]] static constexpr PixelRegion whole(ImageShape shape) noexcept {
    return {0, 0, shape.height, shape.width};
  }
  /// Whether this is the whole of an image of `shape`.
  [[nodiscard]] constexpr bool is_whole(ImageShape shape) const noexcept {
    return top == 0 && left == 0 && height == shape.height && width == shape.width;
  }
  /// Whether `other` lies inside this region.
  [[nodiscard]] constexpr bool contains(const PixelRegion& other) const noexcept {
    return other.top >= top && other.left >= left &&
           std::uint64_t{other.top} + other.height <= std::uint64_t{top} + height &&
           std::uint64_t{other.left} + other.width <= std::uint64_t{left} + width;
  }
  friend constexpr bool operator==(const PixelRegion&, const PixelRegion&) = default;
};

/// The decoded pixels of a region of an image: `pixels` holds rows `[top, top +
/// pixels.shape.height)` and columns `[left, left + pixels.shape.width)` of an image of
/// `whole`'s shape (a crop box is given in `whole`'s pixels). Made from an `ImageView`, it is
/// the whole of that image.
struct RegionView {
  ImageView pixels;        ///< the region's pixels (HWC)
  std::uint32_t top = 0;   ///< the row of `whole` that the first row of `pixels` is
  std::uint32_t left = 0;  ///< the column of `whole` that the first column of `pixels` is
  ImageShape whole;        ///< the shape of the whole image

  RegionView() = default;
  /// The whole of `image`.
  RegionView(ImageView image) noexcept  // NOLINT(google-explicit-constructor): a whole image
      : pixels(image), whole(image.shape) {}
  /// `pixels`, the region at (`top`, `left`) of an image of `whole`.
  RegionView(ImageView region_pixels, std::uint32_t region_top, std::uint32_t region_left,
             ImageShape whole_shape) noexcept
      : pixels(region_pixels), top(region_top), left(region_left), whole(whole_shape) {}

  /// Where the pixels lie in the whole image.
  [[nodiscard]] constexpr PixelRegion region() const noexcept {
    return {top, left, pixels.shape.height, pixels.shape.width};
  }
};

}  // namespace stoke::images

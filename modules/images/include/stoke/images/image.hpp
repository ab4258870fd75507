#pragma once
/// @file
/// The image types every part of stoke::images shares: the shape of a decoded image, a
/// borrowed view of its pixels, an owned image, and an encoded image as a source yields it.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace stoke::images {

/// The shape of a decoded 8-bit image: `height` rows of `width` pixels of `channels` bytes
/// each, interleaved (HWC: the byte of channel `c` of pixel `(y, x)` is at
/// `(y * width + x) * channels + c`).
struct ImageShape {
  std::uint32_t height = 0;    ///< rows
  std::uint32_t width = 0;     ///< pixels a row
  std::uint32_t channels = 0;  ///< bytes a pixel: 1 (grey) or 3 (RGB)

  /// Bytes of an image of this shape.
  [[nodiscard]] constexpr std::size_t bytes() const noexcept {
    return std::size_t{height} * width * channels;
  }
  friend constexpr bool operator==(const ImageShape&, const ImageShape&) = default;
};

/// A decoded image's pixels, borrowed (HWC, see `ImageShape`).
struct ImageView {
  std::span<const std::uint8_t> pixels;  ///< `shape.bytes()` bytes
  ImageShape shape;                      ///< how to read them

  /// The byte of channel `c` of pixel `(y, x)`.
  [[nodiscard]] constexpr std::uint8_t at(std::uint32_t y, std::uint32_t x,
                                          std::uint32_t c) const noexcept {
    return pixels[(std::size_t{y} * shape.width + x) * shape.channels + c];
  }
};

/// A decoded image that owns its pixels (HWC, see `ImageShape`).
struct Image {
  std::vector<std::uint8_t> pixels;  ///< `shape.bytes()` bytes
  ImageShape shape;                  ///< how to read them

  /// A view of the pixels.
  [[nodiscard]] ImageView view() const noexcept { return {pixels, shape}; }
};

/// An image as it is stored (a JPEG or PNG file's bytes) with its class and where it came
/// from: what the image sources (`ImageFolder`, `TarShards`) return and the image batchers
/// take. Copies share the bytes.
struct EncodedImage {
  std::span<const std::uint8_t> bytes;  ///< the encoded file
  std::shared_ptr<const void> storage;  ///< keeps `bytes` alive (a buffer, a mapped file)
  std::uint32_t label = 0;              ///< the class
  std::string source;                   ///< the file, or `shard.tar:key`, for error messages
};

}  // namespace stoke::images

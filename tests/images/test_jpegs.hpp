#pragma once
/// @file
/// Test images of the image batcher suites: smooth RGB patterns encoded as JPEGs (made at
/// test time with `images::encode_jpeg`), and broken copies of them.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <stoke/images/encode.hpp>
#include <stoke/images/image.hpp>

namespace stoke::testing {

/// An RGB image of `height` x `width` whose pixels depend on `seed` (smooth, so JPEG keeps it).
inline images::Image pattern(std::uint32_t height, std::uint32_t width, std::uint32_t seed) {
  images::Image image{std::vector<std::uint8_t>(std::size_t{height} * width * 3),
                      {height, width, 3}};
  for (std::uint32_t y = 0; y < height; ++y) {
    for (std::uint32_t x = 0; x < width; ++x) {
      for (std::uint32_t c = 0; c < 3; ++c) {
        image.pixels[(std::size_t{y} * width + x) * 3 + c] =
            static_cast<std::uint8_t>((x * (3 + c) + y * (5 + seed % 7) + seed * 37) % 256);
      }
    }
  }
  return image;
}

/// `bytes` as an encoded image named `name` with class `label`.
inline images::EncodedImage encoded(std::vector<std::uint8_t> bytes, std::string name,
                                    std::uint32_t label) {
  auto storage = std::make_shared<std::vector<std::uint8_t>>(std::move(bytes));
  return {*storage, storage, label, std::move(name)};
}

/// `count` JPEGs of varying sizes, image `i` named `img-i.jpg` with class `i % 10`.
inline std::vector<images::EncodedImage> jpegs(std::size_t count) {
  std::vector<images::EncodedImage> out;
  for (std::uint32_t i = 0; i < count; ++i) {
    const std::uint32_t height = 40 + 8 * (i % 4);
    const std::uint32_t width = 48 + 8 * (i % 3);
    out.push_back(encoded(images::encode_jpeg(pattern(height, width, i).view()),
                          "img-" + std::to_string(i) + ".jpg", i % 10));
  }
  return out;
}

/// `item` cut to half its bytes, named `name`.
inline images::EncodedImage truncated(const images::EncodedImage& item, std::string name) {
  return encoded({item.bytes.begin(), item.bytes.begin() + item.bytes.size() / 2}, std::move(name),
                 item.label);
}

}  // namespace stoke::testing

#pragma once
/// @file
/// Writing images: JPEG through libjpeg-turbo's TurboJPEG API, PNG through libpng's simplified
/// API; for making data sets (the images example, the benchmark, tests).

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <png.h>
#include <turbojpeg.h>

#include <stoke/core/error.hpp>
#include <stoke/images/image.hpp>

namespace stoke::images {

/// How a JPEG is written.
struct JpegEncoding {
  int quality = 90;           ///< 1 to 100
  bool subsample_420 = true;  ///< chroma at half resolution both ways (4:2:0), else 4:4:4
};

/// `image` (1 or 3 channels) as a JPEG file's bytes. Throws `UsageError` for another channel
/// count, a quality outside [1, 100] or pixels that do not match the shape; `Error` with
/// TurboJPEG's message if it fails.
inline std::vector<std::uint8_t> encode_jpeg(ImageView image, JpegEncoding encoding = {}) {
  const ImageShape& shape = image.shape;
  if ((shape.channels != 1 && shape.channels != 3) || encoding.quality < 1 ||
      encoding.quality > 100 || image.pixels.size() != shape.bytes() || shape.height == 0 ||
      shape.width == 0) {
    throw UsageError(
        "stoke: encode_jpeg: needs a non-empty 1- or 3-channel image whose pixels "
        "match its shape and a quality in [1, 100]; got " +
        std::to_string(shape.height) + "x" + std::to_string(shape.width) + "x" +
        std::to_string(shape.channels) + " with " + std::to_string(image.pixels.size()) +
        " bytes, quality " + std::to_string(encoding.quality));
  }
  const std::unique_ptr<void, int (*)(tjhandle)> handle(tjInitCompress(), tjDestroy);
  if (!handle) throw Error("stoke: encode_jpeg: tjInitCompress failed");
  const bool grey = shape.channels == 1;
  const int subsampling = grey ? TJSAMP_GRAY : (encoding.subsample_420 ? TJSAMP_420 : TJSAMP_444);
  unsigned char* jpeg = nullptr;
  unsigned long jpeg_size = 0;  // NOLINT(google-runtime-int): TurboJPEG's type
  const int failed =
      tjCompress2(handle.get(), image.pixels.data(), static_cast<int>(shape.width), 0,
                  static_cast<int>(shape.height), grey ? TJPF_GRAY : TJPF_RGB, &jpeg, &jpeg_size,
                  subsampling, encoding.quality, TJFLAG_ACCURATEDCT);
  const std::unique_ptr<unsigned char, void (*)(unsigned char*)> owned(jpeg, tjFree);
  if (failed != 0) {
    throw Error(std::string("stoke: encode_jpeg: ") + tjGetErrorStr2(handle.get()));
  }
  return {jpeg, jpeg + jpeg_size};
}

/// `image` (1 or 3 channels) as a PNG file's bytes. Throws `UsageError` for another channel
/// count or pixels that do not match the shape; `Error` with libpng's message if it fails.
inline std::vector<std::uint8_t> encode_png(ImageView image) {
  const ImageShape& shape = image.shape;
  if ((shape.channels != 1 && shape.channels != 3) || image.pixels.size() != shape.bytes() ||
      shape.height == 0 || shape.width == 0) {
    throw UsageError(
        "stoke: encode_png: needs a non-empty 1- or 3-channel image whose pixels "
        "match its shape; got " +
        std::to_string(shape.height) + "x" + std::to_string(shape.width) + "x" +
        std::to_string(shape.channels) + " with " + std::to_string(image.pixels.size()) + " bytes");
  }
  png_image png{};
  png.version = PNG_IMAGE_VERSION;
  png.width = shape.width;
  png.height = shape.height;
  png.format = shape.channels == 1 ? PNG_FORMAT_GRAY : PNG_FORMAT_RGB;
  png_alloc_size_t size = 0;
  if (png_image_write_to_memory(&png, nullptr, &size, 0, image.pixels.data(), 0, nullptr) == 0) {
    throw Error(std::string("stoke: encode_png: ") + png.message);
  }
  std::vector<std::uint8_t> out(size);
  if (png_image_write_to_memory(&png, out.data(), &size, 0, image.pixels.data(), 0, nullptr) == 0) {
    throw Error(std::string("stoke: encode_png: ") + png.message);
  }
  out.resize(size);
  return out;
}

}  // namespace stoke::images

// Fuzzes the JPEG decoder: read_jpeg_header, decode_jpeg_into at full size and at 1/8, to RGB
// and grey, decode_jpeg_region (the region decode, libjpeg's API) at full size and at 1/2, and
// decode_image (format detection, decoded_shape, decode_into) on the input. Where both the
// full decode and the region decode accept the input, the region's pixels must equal the full
// decode's but for its outermost columns (the documented bound).
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <span>
#include <vector>

#include <stoke/images/decode.hpp>
#include <stoke/images/jpeg.hpp>

#include "fuzz_input.hpp"

namespace img = stoke::images;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::span<const std::uint8_t> bytes(data, size);
  stoke::fuzz::refuse_only_with_input_error([&] {
    const img::JpegHeader header = img::read_jpeg_header(bytes, "fuzz.jpg");
    if (header.width == 0 || header.height == 0) std::abort();  // refused, never returned
    if (std::uint64_t{header.height} * header.width > stoke::fuzz::max_decoded_pixels) return;
    for (const img::JpegScale scale : {img::JpegScale{1, 8}, img::JpegScale{1, 1}}) {
      for (const std::uint32_t channels : {3U, 1U}) {
        const img::ImageShape shape = img::jpeg_scaled_shape(header, scale, channels);
        std::vector<std::uint8_t> out(shape.bytes());
        try {
          if (img::decode_jpeg_into(bytes, "fuzz.jpg", scale, channels, out) != shape) {
            std::abort();
          }
        } catch (const stoke::InputError&) {
          // A refusal at one scale or channel count says nothing of the others; go on.
        }
      }
    }
    for (const img::JpegScale scale : {img::JpegScale{1, 1}, img::JpegScale{1, 2}}) {
      const img::ImageShape whole = img::jpeg_scaled_shape(header, scale, 3);
      std::vector<std::uint8_t> full(whole.bytes());
      bool full_decoded = false;
      try {
        (void)img::decode_jpeg_into(bytes, "fuzz.jpg", scale, 3, full);
        full_decoded = true;
      } catch (const stoke::InputError&) {
      }
      // A region in the middle third (at least a pixel), and the bottom-right corner.
      const img::PixelRegion middle{whole.height / 3, whole.width / 3,
                                    std::max(whole.height / 3, 1U), std::max(whole.width / 3, 1U)};
      const img::PixelRegion corner{whole.height - 1, whole.width - 1, 1, 1};
      for (const img::PixelRegion& wanted : {middle, corner}) {
        std::vector<std::uint8_t> scratch;
        img::RegionView view;
        try {
          view = img::decode_jpeg_region(bytes, "fuzz.jpg", scale, 3, wanted, scratch);
        } catch (const stoke::InputError&) {
          continue;
        }
        if (view.whole != whole || !view.region().contains(wanted) ||
            view.pixels.pixels.size() != view.pixels.shape.bytes()) {
          std::abort();
        }
        if (!full_decoded) continue;
        const img::ImageShape shape = view.pixels.shape;
        for (std::uint32_t y = 0; y < shape.height; ++y) {
          for (std::uint32_t x = 1; x + 1 < shape.width; ++x) {
            for (std::uint32_t c = 0; c < 3; ++c) {
              const std::size_t at =
                  (std::size_t{view.top + y} * whole.width + view.left + x) * 3 + c;
              if (view.pixels.at(y, x, c) != full[at]) std::abort();  // outside the bound
            }
          }
        }
      }
    }
    const img::EncodedInfo info = img::read_image_info(bytes, "fuzz.jpg");
    if (info.format != img::ImageFormat::jpeg || info.width != header.width ||
        info.height != header.height) {
      std::abort();  // the header read twice, two answers
    }
    const img::Image image = img::decode_image(bytes, "fuzz.jpg", {3, 0, 0});
    if (image.pixels.size() != image.shape.bytes() ||
        image.shape != img::decoded_shape(info, 3, 0, 0)) {
      std::abort();
    }
  });
  return 0;
}

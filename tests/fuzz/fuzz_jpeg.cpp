// Fuzzes the JPEG decoder: read_jpeg_header, decode_jpeg_into at full size and at 1/8, to RGB
// and grey, and decode_image (format detection, decoded_shape, decode_into) on the input.
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

// Fuzzes the PNG decoder: read_png_header, decode_png_into to RGB and grey, and decode_image
// (format detection, decoded_shape, decode_into) on the input.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <span>
#include <vector>

#include <stoke/images/decode.hpp>
#include <stoke/images/png.hpp>

#include "fuzz_input.hpp"

namespace img = stoke::images;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::span<const std::uint8_t> bytes(data, size);
  stoke::fuzz::refuse_only_with_input_error([&] {
    const img::PngHeader header = img::read_png_header(bytes, "fuzz.png");
    if (header.width == 0 || header.height == 0) std::abort();  // refused, never returned
    if (std::uint64_t{header.height} * header.width > stoke::fuzz::max_decoded_pixels) return;
    for (const std::uint32_t channels : {3U, 1U}) {
      std::vector<std::uint8_t> out(img::ImageShape{header.height, header.width, channels}.bytes());
      try {
        const img::ImageShape shape = img::decode_png_into(bytes, "fuzz.png", channels, out);
        if (shape.bytes() != out.size()) std::abort();
      } catch (const stoke::InputError&) {
        // A refusal for one channel count says nothing of the other; go on.
      }
    }
    const img::EncodedInfo info = img::read_image_info(bytes, "fuzz.png");
    if (info.format != img::ImageFormat::png || info.width != header.width ||
        info.height != header.height || info.channels != header.channels()) {
      std::abort();  // the header read twice, two answers
    }
    const img::Image image = img::decode_image(bytes, "fuzz.png", {1, 0, 0});
    if (image.pixels.size() != image.shape.bytes() || image.shape != img::decoded_shape(info, 1)) {
      std::abort();
    }
  });
  return 0;
}

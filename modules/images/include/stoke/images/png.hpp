#pragma once
/// @file
/// PNG decoding with libpng: the header (`read_png_header`) and decoding into the caller's
/// buffer (`decode_png_into`), to grey or RGB, with the pixels Pillow gives for
/// `Image.open(...).convert("L" or "RGB")`.
///
/// libpng's own transformations are used (not its simplified `png_image` API, which treats
/// 16-bit data as linear light, applies gAMA chunks and composites alpha in linear light, and
/// so gives other pixels than Pillow and torchvision). libpng reports errors by `longjmp`; it
/// jumps only over libpng's C frames and the lambdas of `detail::png_attempt`, which hold
/// nothing with a destructor.

#include <png.h>

#include <csetjmp>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <stoke/core/error.hpp>
#include <stoke/images/image.hpp>

namespace stoke::images {

/// How a PNG stores its pixels (its IHDR colour type).
enum class PngColorType {
  grey,        ///< grey, 1 to 16 bits
  grey_alpha,  ///< grey and alpha, 8 or 16 bits
  rgb,         ///< RGB, 8 or 16 bits
  rgb_alpha,   ///< RGBA, 8 or 16 bits
  palette,     ///< indices into a palette of RGB colours, 1 to 8 bits
};

/// What a PNG's header (IHDR, PLTE, tRNS) says.
struct PngHeader {
  std::uint32_t height = 0;                     ///< rows
  std::uint32_t width = 0;                      ///< pixels a row
  std::uint32_t bit_depth = 8;                  ///< bits a sample (or a palette index)
  PngColorType color_type = PngColorType::rgb;  ///< how pixels are stored
  bool interlaced = false;                      ///< Adam7-interlaced
  bool transparency = false;                    ///< has a tRNS chunk

  /// Channels as stored: 1 (grey), 2 (grey and alpha), 3 (RGB, palette), 4 (RGBA, palette
  /// with transparency).
  [[nodiscard]] constexpr std::uint32_t channels() const noexcept {
    switch (color_type) {
      case PngColorType::grey:
        return 1;
      case PngColorType::grey_alpha:
        return 2;
      case PngColorType::rgb:
        return 3;
      case PngColorType::rgb_alpha:
        return 4;
      case PngColorType::palette:
        return transparency ? 4 : 3;
    }
    return 3;
  }
  friend constexpr bool operator==(const PngHeader&, const PngHeader&) = default;
};

namespace detail {

/// `PNG 'source'`, how the messages name an input.
inline std::string png_context(std::string_view source) {
  return "PNG '" + std::string(source) + "'";
}

/// What libpng's callbacks share: the bytes, how far libpng has read, and its error message.
/// Trivially destructible: libpng's `longjmp` may jump over frames that hold it.
struct PngInput {
  const std::uint8_t* data = nullptr;
  std::size_t size = 0;
  std::size_t offset = 0;  ///< bytes libpng has read
  char message[192] = {};  ///< libpng's error message
};

/// libpng's error callback: keeps the message and jumps back to `png_attempt`.
inline void png_on_error(png_structp png, png_const_charp message) {
  auto* input = static_cast<PngInput*>(png_get_error_ptr(png));
  std::snprintf(input->message, sizeof input->message, "%s", message);
  png_longjmp(png, 1);
}

/// libpng's warning callback: warnings (a bad ancillary chunk, an unknown sRGB profile) are
/// not errors, as for Pillow; libpng stays quiet.
inline void png_on_warning(png_structp /*png*/, png_const_charp /*message*/) {}

/// libpng's read callback: the next `length` bytes of the input, or an error when it ends.
inline void png_read_bytes(png_structp png, png_bytep out, std::size_t length) {
  auto* input = static_cast<PngInput*>(png_get_io_ptr(png));
  if (length > input->size - input->offset) {
    png_error(png, "the file ends early (truncated)");
  }
  std::memcpy(out, input->data + input->offset, length);
  input->offset += length;
}

/// A libpng read struct over `bytes`, freed with the object.
class PngReadStruct {
 public:
  PngReadStruct(std::span<const std::uint8_t> bytes, std::string_view source) : source_(source) {
    input_.data = bytes.data();
    input_.size = bytes.size();
    png_ = png_create_read_struct(PNG_LIBPNG_VER_STRING, &input_, png_on_error, png_on_warning);
    if (png_ != nullptr) info_ = png_create_info_struct(png_);
    if (png_ == nullptr || info_ == nullptr) {
      png_destroy_read_struct(png_ != nullptr ? &png_ : nullptr, nullptr, nullptr);
      throw Error("stoke: " + png_context(source) + ": could not make a libpng read struct");
    }
    png_set_read_fn(png_, &input_, png_read_bytes);
  }
  PngReadStruct(const PngReadStruct&) = delete;
  PngReadStruct& operator=(const PngReadStruct&) = delete;
  ~PngReadStruct() { png_destroy_read_struct(&png_, &info_, nullptr); }

  /// The read struct.
  [[nodiscard]] png_structp png() const noexcept { return png_; }
  /// The info struct.
  [[nodiscard]] png_infop info() const noexcept { return info_; }

  /// Throws `InputError` for libpng's error: names the source, libpng's message and the byte
  /// offset libpng had read to.
  [[noreturn]] void fail(std::string_view doing) const {
    throw InputError("stoke: " + png_context(source_) + ": " + std::string(doing) +
                     " failed at byte offset " + std::to_string(input_.offset) + " of " +
                     std::to_string(input_.size) + ": libpng: " + input_.message);
  }

 private:
  std::string source_;
  PngInput input_;
  png_structp png_ = nullptr;
  png_infop info_ = nullptr;
};

/// Runs `steps` (calls of libpng, nothing with a destructor); false when libpng reported an
/// error (its message is in the `PngInput`).
template <class Steps>
bool png_attempt(png_structp png, const Steps& steps) {
  if (setjmp(png_jmpbuf(png)) != 0) return false;
  steps();
  return true;
}

/// Checks the signature and reads the chunks up to the image data; the header they give.
inline PngHeader read_png_chunks(PngReadStruct& reader) {
  PngHeader header;
  png_structp png = reader.png();
  png_infop info = reader.info();
  png_uint_32 width = 0;
  png_uint_32 height = 0;
  int bit_depth = 0;
  int color_type = 0;
  int interlace = 0;
  bool transparency = false;
  const bool read = detail::png_attempt(png, [&] {
    png_read_info(png, info);
    png_get_IHDR(png, info, &width, &height, &bit_depth, &color_type, &interlace, nullptr, nullptr);
    transparency = png_get_valid(png, info, PNG_INFO_tRNS) != 0;
  });
  if (!read) reader.fail("reading the header");
  header.height = height;
  header.width = width;
  header.bit_depth = static_cast<std::uint32_t>(bit_depth);
  header.interlaced = interlace != PNG_INTERLACE_NONE;
  header.transparency = transparency;
  switch (color_type) {
    case PNG_COLOR_TYPE_GRAY:
      header.color_type = PngColorType::grey;
      break;
    case PNG_COLOR_TYPE_GRAY_ALPHA:
      header.color_type = PngColorType::grey_alpha;
      break;
    case PNG_COLOR_TYPE_RGB:
      header.color_type = PngColorType::rgb;
      break;
    case PNG_COLOR_TYPE_RGB_ALPHA:
      header.color_type = PngColorType::rgb_alpha;
      break;
    default:
      header.color_type = PngColorType::palette;
      break;
  }
  return header;
}

/// Pillow's luminance of an RGB pixel (`convert("L")`: ITU-R 601-2, 16-bit fixed point).
constexpr std::uint8_t pillow_luma(std::uint8_t r, std::uint8_t g, std::uint8_t b) noexcept {
  return static_cast<std::uint8_t>((r * 19595U + g * 38470U + b * 7471U + 0x8000U) >> 16);
}

}  // namespace detail

/// The header of the PNG `bytes`: size, bit depth, colour type, interlacing, transparency.
/// Throws `InputError` naming `source`, libpng's message and the byte offset when the bytes
/// are not a PNG, or the chunks before the image data are malformed, truncated or fail their
/// CRC, or the image is wider or taller than libpng's limit (1,000,000 pixels).
inline PngHeader read_png_header(std::span<const std::uint8_t> bytes, std::string_view source) {
  if (bytes.empty()) throw InputError("stoke: " + detail::png_context(source) + " is empty");
  detail::PngReadStruct reader(bytes, source);
  return detail::read_png_chunks(reader);
}

/// Decodes the PNG `bytes` whole to `channels` channels into `out`, which must hold exactly
/// `height * width * channels` bytes of `read_png_header(bytes, source)`; returns the shape.
/// Gives Pillow's pixels of `Image.open(...).convert("RGB")` (3 channels) or
/// `.convert("L")` (1 channel):
/// - alpha (RGBA, grey+alpha, a palette's or a colour's tRNS transparency) is dropped, not
///   composited: the colour of a transparent pixel is kept;
/// - 16-bit samples keep their high byte; 1-, 2- and 4-bit grey is scaled to 0..255;
/// - palettes are expanded; grey is repeated to RGB;
/// - colour to grey is Pillow's `L = (19595 R + 38470 G + 7471 B + 32768) >> 16` (this case
///   decodes to RGB in a scratch buffer first);
/// - no gamma or colour-profile correction (gAMA, cHRM, iCCP, sRGB are ignored);
/// - Adam7 interlacing is undone.
/// Reads up to IEND: every chunk's CRC and the whole image data are checked.
///
/// Throws `UsageError` naming `source` for `channels` other than 1 or 3 or `out` of another
/// size; `InputError` naming `source`, libpng's message and the byte offset it had read to
/// for what `read_png_header` refuses, and for image data or chunks after it that are corrupt
/// or truncated (`out` then holds a partial image).
inline ImageShape decode_png_into(std::span<const std::uint8_t> bytes, std::string_view source,
                                  std::uint32_t channels, std::span<std::uint8_t> out) {
  if (channels != 1 && channels != 3) {
    throw UsageError("stoke: " + detail::png_context(source) + ": cannot decode to " +
                     std::to_string(channels) + " channels (1: grey, 3: RGB)");
  }
  if (bytes.empty()) throw InputError("stoke: " + detail::png_context(source) + " is empty");
  detail::PngReadStruct reader(bytes, source);
  const PngHeader header = detail::read_png_chunks(reader);
  const ImageShape shape{header.height, header.width, channels};
  if (out.size() != shape.bytes()) {
    throw UsageError("stoke: " + detail::png_context(source) + ": the output holds " +
                     std::to_string(out.size()) + " bytes, not the " +
                     std::to_string(shape.bytes()) + " of " + std::to_string(shape.height) + "x" +
                     std::to_string(shape.width) + "x" + std::to_string(channels) + " pixels");
  }
  const bool colour = header.color_type == PngColorType::rgb ||
                      header.color_type == PngColorType::rgb_alpha ||
                      header.color_type == PngColorType::palette;
  // libpng decodes to RGB where the image has colour, else to grey.
  const std::uint32_t decoded_channels = colour || channels == 3 ? 3 : 1;
  std::vector<std::uint8_t> scratch;
  std::span<std::uint8_t> target = out;
  if (decoded_channels != channels) {
    scratch.resize(ImageShape{header.height, header.width, decoded_channels}.bytes());
    target = scratch;
  }
  const std::size_t row_bytes = std::size_t{header.width} * decoded_channels;
  std::vector<png_bytep> rows(header.height);
  for (std::size_t y = 0; y < rows.size(); ++y) rows[y] = target.data() + y * row_bytes;

  png_structp png = reader.png();
  png_infop info = reader.info();
  std::size_t libpng_row_bytes = 0;
  const bool configured = detail::png_attempt(png, [&] {
    if (header.bit_depth == 16) png_set_strip_16(png);
    if (header.color_type == PngColorType::palette) png_set_palette_to_rgb(png);
    if (header.color_type == PngColorType::grey && header.bit_depth < 8) {
      png_set_expand_gray_1_2_4_to_8(png);
    }
    png_set_strip_alpha(png);
    if (decoded_channels == 3 && !colour) png_set_gray_to_rgb(png);
    (void)png_set_interlace_handling(png);
    png_read_update_info(png, info);
    libpng_row_bytes = png_get_rowbytes(png, info);
  });
  if (!configured) reader.fail("setting up the decoder");
  if (libpng_row_bytes != row_bytes) {
    throw Error("stoke: " + detail::png_context(source) + ": libpng would write rows of " +
                std::to_string(libpng_row_bytes) + " bytes, not " + std::to_string(row_bytes));
  }
  const bool decoded = detail::png_attempt(png, [&] {
    png_read_image(png, rows.data());
    png_read_end(png, nullptr);
  });
  if (!decoded) reader.fail("decoding");
  if (target.data() != out.data()) {
    for (std::size_t i = 0, o = 0; o < out.size(); i += 3, ++o) {
      out[o] = detail::pillow_luma(target[i], target[i + 1], target[i + 2]);
    }
  }
  return shape;
}

}  // namespace stoke::images

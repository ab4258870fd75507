#pragma once
/// @file
/// Decoding JPEG and PNG images whatever their format: `read_image_info` (format by the magic
/// bytes, size, channels), `decoded_shape` (the size a decode reduced as far as a minimum
/// allows gives), `decode_into` (into the caller's buffer), `decode_region` (only the rows and
/// columns a crop needs, for JPEGs) and `decode_image` (into a new `Image`).

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <stoke/core/error.hpp>
#include <stoke/images/detail/image_region.hpp>
#include <stoke/images/image.hpp>
#include <stoke/images/jpeg.hpp>
#include <stoke/images/png.hpp>

namespace stoke::images {

/// The most pixels (height times width, as stored) an image may have: 2^28 (268 million,
/// 16384 x 16384). Larger images are refused before any pixel buffer is allocated, so that a
/// small file declaring a huge image (a decompression bomb) cannot exhaust memory. A
/// progressive JPEG needs 2 bytes a stored sample besides the output, whatever the scale.
inline constexpr std::uint64_t max_image_pixels = std::uint64_t{1} << 28;

/// The formats stoke decodes.
enum class ImageFormat {
  jpeg,  ///< JPEG (JFIF, Exif), baseline or progressive, 8-bit
  png,   ///< PNG, any colour type and bit depth
};

/// The name of `format`: `"JPEG"` or `"PNG"`.
[[nodiscard]] constexpr std::string_view format_name(ImageFormat format) noexcept {
  return format == ImageFormat::jpeg ? "JPEG" : "PNG";
}

/// What an encoded image's header says.
struct EncodedInfo {
  ImageFormat format = ImageFormat::jpeg;  ///< the format, from the magic bytes
  std::uint32_t height = 0;                ///< rows, as stored
  std::uint32_t width = 0;                 ///< pixels a row, as stored
  /// Channels as stored: 1 (grey), 2 (grey and alpha, PNG), 3 (colour), 4 (RGBA or palette
  /// with transparency PNG, CMYK JPEG).
  std::uint32_t channels = 0;
  friend constexpr bool operator==(const EncodedInfo&, const EncodedInfo&) = default;
};

namespace detail {

/// The PNG signature.
inline constexpr std::uint8_t png_signature[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};

/// The first (at most 8) bytes of `bytes` in hex, for messages: `ff d8 ff e0 ...`.
inline std::string first_bytes_hex(std::span<const std::uint8_t> bytes) {
  static constexpr char digits[] = "0123456789abcdef";
  std::string text;
  for (std::size_t i = 0; i < std::min<std::size_t>(bytes.size(), 8); ++i) {
    if (i > 0) text += ' ';
    text += digits[bytes[i] >> 4];
    text += digits[bytes[i] & 15];
  }
  return text;
}

/// `'source'`, how the messages name an input.
inline std::string image_context(std::string_view source) {
  return "image '" + std::string(source) + "'";
}

/// The scale, of `jpeg_scales()`, that decodes a JPEG of `info` to `shape`'s size; the first
/// (largest) when several give it, as TurboJPEG picks; none when no scale gives it.
inline const JpegScale* jpeg_scale_for(const EncodedInfo& info, const ImageShape& shape) {
  for (const JpegScale& scale : jpeg_scales()) {
    if (scale.scaled(info.height) == shape.height && scale.scaled(info.width) == shape.width) {
      return &scale;
    }
  }
  return nullptr;
}

/// Throws `UsageError` unless `channels` is 1 or 3.
inline void check_decoded_channels(std::uint32_t channels, std::string_view source) {
  if (channels != 1 && channels != 3) {
    throw UsageError("stoke: " + image_context(source) + ": cannot decode to " +
                     std::to_string(channels) + " channels (1: grey, 3: RGB)");
  }
}

}  // namespace detail

/// The format (by its magic bytes: `ff d8 ff` JPEG, `89 'PNG' \r \n 1a \n` PNG), size and
/// channels of the encoded image `bytes`, from its header. Throws `InputError` naming `source`
/// when `bytes` is empty, is neither format (the message shows its first bytes), has a header
/// `read_jpeg_header` or `read_png_header` refuses (with the decoder's message, and for PNG the
/// byte offset), or has more than `max_image_pixels` pixels.
inline EncodedInfo read_image_info(std::span<const std::uint8_t> bytes, std::string_view source) {
  if (bytes.empty()) {
    throw InputError("stoke: " + detail::image_context(source) + " is empty (0 bytes)");
  }
  EncodedInfo info;
  if (bytes.size() >= 3 && bytes[0] == 0xff && bytes[1] == 0xd8 && bytes[2] == 0xff) {
    const JpegHeader header = read_jpeg_header(bytes, source);
    info = {ImageFormat::jpeg, header.height, header.width, header.channels()};
  } else if (bytes.size() >= sizeof detail::png_signature &&
             std::equal(std::begin(detail::png_signature), std::end(detail::png_signature),
                        bytes.begin())) {
    const PngHeader header = read_png_header(bytes, source);
    info = {ImageFormat::png, header.height, header.width, header.channels()};
  } else {
    throw InputError("stoke: " + detail::image_context(source) + " (" +
                     std::to_string(bytes.size()) +
                     " bytes) is neither a JPEG nor a PNG: it starts with bytes " +
                     detail::first_bytes_hex(bytes));
  }
  if (std::uint64_t{info.height} * info.width > max_image_pixels) {
    throw InputError("stoke: " + std::string(format_name(info.format)) + " '" +
                     std::string(source) + "' has " + std::to_string(info.height) + "x" +
                     std::to_string(info.width) + " pixels, more than the " +
                     std::to_string(max_image_pixels) + " stoke decodes (max_image_pixels)");
  }
  return info;
}

/// As a minimum side for `decode_image` or `decoded_shape`: no reduction, the full size.
inline constexpr std::uint32_t full_size = std::numeric_limits<std::uint32_t>::max();

/// The shape a decode of an image of `info` to `channels` channels (1: grey, 3: RGB) gives
/// when reduced as far as possible while staying at least `min_height` x `min_width`: a JPEG
/// takes the smallest of the DCT scaling factors of `jpeg_scales()` (1/8 to 1) that keeps both
/// sides at least that large, or full size when none does; a PNG is always full size. With the
/// minimum 0 x 0 a JPEG decodes at 1/8; with the default, `full_size`, at full size. Throws
/// `UsageError` for `channels` other than 1 or 3.
[[nodiscard]] inline ImageShape decoded_shape(const EncodedInfo& info, std::uint32_t channels,
                                              std::uint32_t min_height = full_size,
                                              std::uint32_t min_width = full_size) {
  detail::check_decoded_channels(channels, format_name(info.format));
  if (info.format == ImageFormat::png) return {info.height, info.width, channels};
  const auto scales = jpeg_scales();
  for (auto scale = scales.rbegin(); scale != scales.rend(); ++scale) {
    if (scale->scaled(info.height) >= min_height && scale->scaled(info.width) >= min_width) {
      return {scale->scaled(info.height), scale->scaled(info.width), channels};
    }
  }
  return {info.height, info.width, channels};
}

/// Decodes the image `bytes`, whose header `read_image_info` gave as `info`, into `out`:
/// `decode_into` below without reading the header again (the row of a batcher has read it to
/// draw the crop). Refuses what that `decode_into` refuses once the header is read.
inline void decode_into(std::span<const std::uint8_t> bytes, std::string_view source,
                        const EncodedInfo& info, ImageShape shape, std::span<std::uint8_t> out) {
  detail::check_decoded_channels(shape.channels, source);
  const auto describe = [](const ImageShape& s) {
    return std::to_string(s.height) + "x" + std::to_string(s.width) + "x" +
           std::to_string(s.channels);
  };
  const JpegScale* scale =
      info.format == ImageFormat::jpeg ? detail::jpeg_scale_for(info, shape) : nullptr;
  const bool full_size = shape.height == info.height && shape.width == info.width;
  if (info.format == ImageFormat::jpeg ? scale == nullptr : !full_size) {
    throw UsageError("stoke: " + std::string(format_name(info.format)) + " '" +
                     std::string(source) + "' of " + std::to_string(info.height) + "x" +
                     std::to_string(info.width) + " pixels does not decode to " + describe(shape) +
                     " (take the shape from decoded_shape)");
  }
  if (out.size() != shape.bytes()) {
    throw UsageError("stoke: " + detail::image_context(source) + ": the output holds " +
                     std::to_string(out.size()) + " bytes, not the " +
                     std::to_string(shape.bytes()) + " of " + describe(shape));
  }
  if (info.format == ImageFormat::png) {
    (void)decode_png_into(bytes, source, shape.channels, out);
  } else if (info.channels == 4) {
    throw InputError("stoke: " + detail::jpeg_context(source) +
                     " is a CMYK or YCCK JPEG; stoke decodes grey, YCbCr and RGB JPEGs only");
  } else {
    detail::decompress_jpeg(bytes, source, shape, out);
  }
}

/// Decodes the region `wanted` (rows and columns of the image at `shape`, which is as for
/// `decode_into`) of the image `bytes`, whose header `read_image_info` gave as `info`, into
/// `scratch` (resized); returns the view of the pixels decoded, which hold `wanted`. A JPEG
/// decodes only the region (`decode_jpeg_region`: widened on the left to a whole iMCU column;
/// its outermost columns may differ from the full decode's, the rest is equal); a
/// `wanted` that is the whole image, and every PNG (the format has no region), decode whole
/// (`decode_into`). Refuses what `decode_into` refuses, and a `wanted` outside `shape` or
/// empty (`UsageError`).
inline RegionView decode_region(std::span<const std::uint8_t> bytes, std::string_view source,
                                const EncodedInfo& info, ImageShape shape, PixelRegion wanted,
                                std::vector<std::uint8_t>& scratch) {
  if (wanted.height == 0 || wanted.width == 0 || !PixelRegion::whole(shape).contains(wanted)) {
    throw UsageError("stoke: " + detail::image_context(source) + ": the region of " +
                     std::to_string(wanted.height) + "x" + std::to_string(wanted.width) +
                     " pixels at row " + std::to_string(wanted.top) + ", column " +
                     std::to_string(wanted.left) + " is not inside the " +
                     std::to_string(shape.height) + "x" + std::to_string(shape.width) +
                     " pixels decoded");
  }
  if (info.format == ImageFormat::jpeg && !wanted.is_whole(shape)) {
    detail::check_decoded_channels(shape.channels, source);
    const JpegScale* scale = detail::jpeg_scale_for(info, shape);
    if (scale != nullptr && info.channels != 4) {
      return detail::decompress_jpeg_region(bytes, source, *scale, shape, wanted, scratch);
    }
  }
  scratch.resize(shape.bytes());
  decode_into(bytes, source, info, shape, scratch);
  return ImageView{std::span<const std::uint8_t>(scratch.data(), shape.bytes()), shape};
}

/// Decodes the image `bytes` into `out` without an extra copy (a PNG with colour decoded to
/// grey excepted, see `decode_png_into`). `shape` must be one `decoded_shape` gives for the
/// image's `read_image_info` and `shape.channels`, and `out` exactly `shape.bytes()` bytes.
/// JPEGs decode as `decode_jpeg_into` says (Pillow's pixels, `Image.draft` when reduced), PNGs
/// as `decode_png_into` says (Pillow's `convert("RGB")` or `convert("L")`: alpha dropped,
/// 16-bit to the high byte).
///
/// Throws `UsageError` naming `source` for `shape.channels` other than 1 or 3, a `shape` no
/// scale gives, or `out` of another size; `InputError` naming `source`, the format, the
/// decoder's message (and for PNG the byte offset) for what `read_image_info` refuses, for
/// CMYK and YCCK JPEGs, and for corrupt or truncated data (`out` then holds a partial image).
inline void decode_into(std::span<const std::uint8_t> bytes, std::string_view source,
                        ImageShape shape, std::span<std::uint8_t> out) {
  detail::check_decoded_channels(shape.channels, source);
  decode_into(bytes, source, read_image_info(bytes, source), shape, out);
}

/// How `decode_image` decodes.
struct DecodeOptions {
  std::uint32_t channels = 3;  ///< 1: grey, 3: RGB
  /// A JPEG is reduced, by DCT scaling, down to no fewer rows (see `decoded_shape`); the
  /// default, `full_size`, keeps every row.
  std::uint32_t min_height = full_size;
  /// ... and no fewer pixels a row; the default, `full_size`, keeps them all.
  std::uint32_t min_width = full_size;
};

/// The image `bytes` decoded into a new `Image` of `decoded_shape(read_image_info(bytes,
/// source), options.channels, options.min_height, options.min_width)`; refuses what
/// `decode_into` refuses, before allocating the pixels.
[[nodiscard]] inline Image decode_image(std::span<const std::uint8_t> bytes,
                                        std::string_view source, DecodeOptions options = {}) {
  detail::check_decoded_channels(options.channels, source);
  const EncodedInfo info = read_image_info(bytes, source);
  Image image;
  image.shape = decoded_shape(info, options.channels, options.min_height, options.min_width);
  image.pixels.resize(image.shape.bytes());
  decode_into(bytes, source, info, image.shape, image.pixels);
  return image;
}

/// `image`'s bytes decoded (see the overload above), named by `image.source` in errors.
[[nodiscard]] inline Image decode_image(const EncodedImage& image, DecodeOptions options = {}) {
  return decode_image(image.bytes, image.source, options);
}

}  // namespace stoke::images

#pragma once
/// @file
/// JPEG decoding with libjpeg-turbo: the header (`read_jpeg_header`), the DCT scaling factors
/// (`jpeg_scales`), decoding at one of them into the caller's buffer (`decode_jpeg_into`,
/// TurboJPEG's API), to grey or RGB, and decoding only a region of the image
/// (`decode_jpeg_region`, libjpeg's API: TurboJPEG 2.x has no cropping region). Each thread
/// decodes with handles of its own, made on first use and freed when the thread ends.

#include <turbojpeg.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <stoke/core/error.hpp>
#include <stoke/images/detail/image_region.hpp>
#include <stoke/images/detail/libjpeg_region.hpp>
#include <stoke/images/image.hpp>

namespace stoke::images {

/// How a JPEG stores its colours (TurboJPEG's `TJCS`).
enum class JpegColorspace {
  rgb,    ///< RGB, not transformed
  ycbcr,  ///< YCbCr, the usual colour JPEG
  grey,   ///< one luminance component
  cmyk,   ///< CMYK, not transformed (refused by `decode_jpeg_into`)
  ycck,   ///< CMYK transformed to YCCK (refused by `decode_jpeg_into`)
};

/// How a JPEG subsamples its chroma (TurboJPEG's `TJSAMP`).
enum class JpegSubsampling {
  s444,  ///< 4:4:4, no subsampling
  s422,  ///< 4:2:2, half the columns
  s420,  ///< 4:2:0, half the columns and rows
  grey,  ///< no chroma
  s440,  ///< 4:4:0, half the rows
  s411,  ///< 4:1:1, a quarter of the columns
};

/// What a JPEG's header says.
struct JpegHeader {
  std::uint32_t height = 0;                             ///< rows
  std::uint32_t width = 0;                              ///< pixels a row
  JpegSubsampling subsampling = JpegSubsampling::s444;  ///< chroma subsampling
  JpegColorspace colorspace = JpegColorspace::ycbcr;    ///< how colours are stored

  /// Components as stored: 1 (grey), 3 (RGB, YCbCr) or 4 (CMYK, YCCK).
  [[nodiscard]] constexpr std::uint32_t channels() const noexcept {
    switch (colorspace) {
      case JpegColorspace::grey:
        return 1;
      case JpegColorspace::cmyk:
      case JpegColorspace::ycck:
        return 4;
      default:
        return 3;
    }
  }
  friend constexpr bool operator==(const JpegHeader&, const JpegHeader&) = default;
};

/// A DCT scaling factor `num / denom`: libjpeg-turbo decodes the image reduced by it, in the
/// inverse DCT, at a fraction of the full decode's cost.
struct JpegScale {
  std::uint32_t num = 1;    ///< numerator
  std::uint32_t denom = 1;  ///< denominator

  /// A dimension of `dimension` pixels scaled, rounded up (TurboJPEG's `TJSCALED`).
  [[nodiscard]] constexpr std::uint32_t scaled(std::uint32_t dimension) const noexcept {
    return static_cast<std::uint32_t>((std::uint64_t{dimension} * num + denom - 1) / denom);
  }
  friend constexpr bool operator==(const JpegScale&, const JpegScale&) = default;
};

namespace detail {

/// `JPEG 'source'`, how the messages name an input.
inline std::string jpeg_context(std::string_view source) {
  return "JPEG '" + std::string(source) + "'";
}

/// A TurboJPEG decompressor handle, freed with the object. Never shared between threads.
///
/// Every image gets a handle of its own (`fresh`): libjpeg keeps the quantisation and Huffman
/// tables of the last image in its decompressor, and a JPEG whose scans use a table it does
/// not define (Motion-JPEG frames leave out the standard Huffman tables) would otherwise decode
/// with the tables of whatever image the thread decoded before, so its pixels would depend on
/// the order of the epoch and on the worker count. A new handle costs about 0.1 us.
class TurboJpegDecompressor {
 public:
  TurboJpegDecompressor() = default;
  TurboJpegDecompressor(const TurboJpegDecompressor&) = delete;
  TurboJpegDecompressor& operator=(const TurboJpegDecompressor&) = delete;
  ~TurboJpegDecompressor() { reset(); }

  /// A new handle for the next image, with no table of an image decoded before.
  [[nodiscard]] tjhandle fresh() {
    reset();
    handle_ = tjInitDecompress();
    if (handle_ == nullptr) {
      throw Error(std::string("stoke: could not make a TurboJPEG decompressor: ") +
                  tjGetErrorStr2(nullptr));
    }
    return handle_;
  }

  /// Throws `InputError` for the failed call: names the source, what was being done,
  /// TurboJPEG's message and whether it was a corrupt-data warning (refused as well). Frees
  /// the handle first: libjpeg-turbo 2.1 does not always reset it after an error (the next
  /// image would fail with "two SOI markers").
  [[noreturn]] void fail(std::string_view source, std::string_view doing) {
    const bool warning = tjGetErrorCode(handle_) == TJERR_WARNING;
    const std::string message = tjGetErrorStr2(handle_);
    reset();
    throw InputError("stoke: " + jpeg_context(source) + ": " + std::string(doing) +
                     " failed: TurboJPEG: " + message +
                     (warning ? " (corrupt data: libjpeg-turbo's warning is refused)" : ""));
  }

 private:
  void reset() noexcept {
    if (handle_ != nullptr) tjDestroy(handle_);
    handle_ = nullptr;
  }

  tjhandle handle_ = nullptr;
};

/// This thread's decompressor, made on first use.
inline TurboJpegDecompressor& thread_jpeg_decompressor() {
  thread_local TurboJpegDecompressor decompressor;
  return decompressor;
}

/// TurboJPEG's flags for every decode: the accurate integer inverse DCT (ISLOW, what Pillow
/// uses), stop at the first corrupt-data warning, and at most 500 progressive scans.
inline constexpr int jpeg_decode_flags =
    TJFLAG_ACCURATEDCT | TJFLAG_STOPONWARNING | TJFLAG_LIMITSCANS;

/// Every TurboJPEG scaling factor that reduces or keeps the size, largest first.
inline std::vector<JpegScale> reducing_jpeg_scales() {
  int count = 0;
  const tjscalingfactor* factors = tjGetScalingFactors(&count);
  std::vector<JpegScale> scales;
  for (int i = 0; factors != nullptr && i < count; ++i) {
    if (factors[i].num > 0 && factors[i].num <= factors[i].denom) {
      scales.push_back({static_cast<std::uint32_t>(factors[i].num),
                        static_cast<std::uint32_t>(factors[i].denom)});
    }
  }
  std::sort(scales.begin(), scales.end(), [](const JpegScale& a, const JpegScale& b) {
    return std::uint64_t{a.num} * b.denom > std::uint64_t{b.num} * a.denom;
  });
  return scales;
}

/// Decompresses the JPEG `bytes` to `shape` (1 or 3 channels, a size one of `jpeg_scales()`
/// gives for it) into `out` (exactly `shape.bytes()` bytes), the checks of `decode_jpeg_into`
/// being done by the caller. Throws `InputError` naming `source` for corrupt or truncated data.
inline void decompress_jpeg(std::span<const std::uint8_t> bytes, std::string_view source,
                            const ImageShape& shape, std::span<std::uint8_t> out) {
  auto& decompressor = thread_jpeg_decompressor();
  if (tjDecompress2(decompressor.fresh(), bytes.data(), bytes.size(), out.data(),
                    static_cast<int>(shape.width), static_cast<int>(shape.width * shape.channels),
                    static_cast<int>(shape.height), shape.channels == 1 ? TJPF_GRAY : TJPF_RGB,
                    jpeg_decode_flags) != 0) {
    decompressor.fail(source, "decoding");
  }
}

/// Throws `InputError` for a failed step of `decoder`: names the source, libjpeg-turbo's message
/// and whether it was a corrupt-data warning (refused as well). Frees the decompressor first.
[[noreturn]] inline void fail_region(LibjpegDecompressor& decoder, std::string_view source) {
  const bool warning = decoder.warning();
  const std::string message(decoder.message());
  decoder.reset();
  throw InputError("stoke: " + jpeg_context(source) +
                   ": decoding a region failed: libjpeg-turbo: " + message +
                   (warning ? " (corrupt data: libjpeg-turbo's warning is refused)" : ""));
}

/// The region of a progressive JPEG: the whole image decoded into `out` (resized to
/// `whole.bytes()`) and the view of the full rows that hold `wanted`. libjpeg decodes every scan
/// of a progressive JPEG before its first row anyway, and where the scans leave coefficients
/// unrefined it smooths each block with its neighbours, which a cropped region does not have:
/// a region decode would differ from the full decode inside the region, not only on its edges.
inline RegionView whole_rows_region(std::span<const std::uint8_t> bytes, std::string_view source,
                                    const ImageShape& whole, const PixelRegion& wanted,
                                    std::vector<std::uint8_t>& out) {
  out.resize(whole.bytes());
  decompress_jpeg(bytes, source, whole, out);
  const std::size_t row_bytes = std::size_t{whole.width} * whole.channels;
  const ImageShape shape{wanted.height, whole.width, whole.channels};
  return {
      ImageView{std::span<const std::uint8_t>(out.data() + wanted.top * row_bytes, shape.bytes()),
                shape},
      wanted.top, 0, whole};
}

/// Decodes rows `[wanted.top, wanted.top + wanted.height)` of the JPEG `bytes` reduced by
/// `scale` to `channels` channels, only the columns of whole iMCUs that hold
/// `[wanted.left, wanted.left + wanted.width)`, into `out` (resized to the decoded region);
/// `whole` is the shape the full decode gives (the caller checked `scale`, `channels`, that
/// the JPEG is not CMYK, and that `wanted` lies in `whole`). Each decoded pixel equals the
/// full decode's (`decompress_jpeg`) but for the region's outermost columns, where libjpeg's
/// fancy upsampling has no chroma neighbour past the edge (see `decode_jpeg_region`). Throws
/// `InputError` naming `source` with libjpeg-turbo's message for corrupt data in the rows decoded
/// (or skipped), and for a file with no end-of-image marker (cut short).
inline RegionView decompress_jpeg_region(std::span<const std::uint8_t> bytes,
                                         std::string_view source, JpegScale scale,
                                         const ImageShape& whole, const PixelRegion& wanted,
                                         std::vector<std::uint8_t>& out) {
  LibjpegDecompressor& decoder = thread_libjpeg_decompressor();
  if (!decoder.read_header(bytes, scale.num, scale.denom, whole.channels)) {
    fail_region(decoder, source);
  }
  if (decoder.progressive()) {
    decoder.finish();
    return whole_rows_region(bytes, source, whole, wanted, out);
  }
  if (!decoder.start()) fail_region(decoder, source);
  if (decoder.output_height() != whole.height || decoder.output_width() != whole.width) {
    decoder.reset();
    throw InputError("stoke: " + jpeg_context(source) + ": libjpeg-turbo decodes it to " +
                     std::to_string(decoder.output_height()) + "x" +
                     std::to_string(decoder.output_width()) + " at " + std::to_string(scale.num) +
                     "/" + std::to_string(scale.denom) + ", TurboJPEG to " +
                     std::to_string(whole.height) + "x" + std::to_string(whole.width));
  }
  if (!has_end_of_image(bytes, decoder.scan_offset())) {
    decoder.reset();
    throw InputError("stoke: " + jpeg_context(source) +
                     ": decoding a region failed: libjpeg-turbo: Premature end of JPEG file (no "
                     "end-of-image marker after the first scan; corrupt data: libjpeg-turbo's "
                     "warning is refused)");
  }
  std::uint32_t left = wanted.left;
  std::uint32_t width = wanted.width;
  if (width != whole.width && !decoder.crop(left, width)) fail_region(decoder, source);
  if (wanted.top > 0 && !decoder.skip(wanted.top)) fail_region(decoder, source);
  const ImageShape shape{wanted.height, width, whole.channels};
  try {
    out.resize(shape.bytes());
  } catch (...) {
    decoder.finish();
    throw;
  }
  if (!decoder.read(out.data(), shape.height, std::size_t{width} * whole.channels)) {
    fail_region(decoder, source);
  }
  decoder.finish();
  return {ImageView{std::span<const std::uint8_t>(out.data(), shape.bytes()), shape}, wanted.top,
          left, whole};
}

}  // namespace detail

/// The DCT scaling factors `decode_jpeg_into` takes: those of `tjGetScalingFactors` from 1/1
/// down to 1/8 (libjpeg-turbo 2.1: 1, 7/8, 3/4, 5/8, 1/2, 3/8, 1/4, 1/8), largest first.
inline std::span<const JpegScale> jpeg_scales() {
  static const std::vector<JpegScale> scales = detail::reducing_jpeg_scales();
  return scales;
}

/// The header of the JPEG `bytes`: size, subsampling and colourspace. Throws `InputError`
/// naming `source` and TurboJPEG's message when the bytes are not a JPEG or its header up to
/// the first scan is malformed, truncated or of a subsampling TurboJPEG does not know.
inline JpegHeader read_jpeg_header(std::span<const std::uint8_t> bytes, std::string_view source) {
  if (bytes.empty()) throw InputError("stoke: " + detail::jpeg_context(source) + " is empty");
  auto& decompressor = detail::thread_jpeg_decompressor();
  int width = 0;
  int height = 0;
  int subsampling = 0;
  int colorspace = 0;
  if (tjDecompressHeader3(decompressor.fresh(), bytes.data(), bytes.size(), &width, &height,
                          &subsampling, &colorspace) != 0) {
    decompressor.fail(source, "reading the header");
  }
  if (width <= 0 || height <= 0 || subsampling < TJSAMP_444 || subsampling > TJSAMP_411 ||
      colorspace < TJCS_RGB || colorspace > TJCS_YCCK) {
    throw InputError("stoke: " + detail::jpeg_context(source) + ": the header gives " +
                     std::to_string(width) + "x" + std::to_string(height) +
                     " pixels, subsampling " + std::to_string(subsampling) + ", colourspace " +
                     std::to_string(colorspace) + ", which TurboJPEG cannot decode");
  }
  return {static_cast<std::uint32_t>(height), static_cast<std::uint32_t>(width),
          static_cast<JpegSubsampling>(subsampling), static_cast<JpegColorspace>(colorspace)};
}

/// The shape a JPEG of `header` decodes to at `scale` with `channels` channels.
[[nodiscard]] constexpr ImageShape jpeg_scaled_shape(const JpegHeader& header, JpegScale scale,
                                                     std::uint32_t channels) noexcept {
  return {scale.scaled(header.height), scale.scaled(header.width), channels};
}

namespace detail {

/// The header of the JPEG `bytes`, after checking that it can be decoded at `scale` to
/// `channels` channels: throws `UsageError` for a `scale` not in `jpeg_scales()` or `channels`
/// other than 1 or 3, `InputError` for what `read_jpeg_header` refuses and for CMYK and YCCK.
inline JpegHeader checked_jpeg_header(std::span<const std::uint8_t> bytes, std::string_view source,
                                      JpegScale scale, std::uint32_t channels) {
  const auto scales = jpeg_scales();
  if (std::find(scales.begin(), scales.end(), scale) == scales.end()) {
    throw UsageError("stoke: " + jpeg_context(source) + ": " + std::to_string(scale.num) + "/" +
                     std::to_string(scale.denom) +
                     " is not one of TurboJPEG's scaling factors from 1/8 to 1 (jpeg_scales)");
  }
  if (channels != 1 && channels != 3) {
    throw UsageError("stoke: " + jpeg_context(source) + ": cannot decode to " +
                     std::to_string(channels) + " channels (1: grey, 3: RGB)");
  }
  const JpegHeader header = read_jpeg_header(bytes, source);
  if (header.colorspace == JpegColorspace::cmyk || header.colorspace == JpegColorspace::ycck) {
    throw InputError("stoke: " + jpeg_context(source) + " is a " +
                     (header.colorspace == JpegColorspace::cmyk ? "CMYK" : "YCCK") +
                     " JPEG; stoke decodes grey, YCbCr and RGB JPEGs only");
  }
  return header;
}

}  // namespace detail

/// Decodes the JPEG `bytes` reduced by `scale` (one of `jpeg_scales()`) to `channels` channels
/// (1: grey, the luminance; 3: RGB) into `out`, which must hold exactly
/// `jpeg_scaled_shape(read_jpeg_header(bytes, source), scale, channels).bytes()` bytes; returns
/// that shape. Decodes with the accurate integer inverse DCT and libjpeg's smooth ("fancy")
/// chroma upsampling, as Pillow does, so the pixels equal Pillow's (`Image.draft` for a scale
/// below 1). Scales that give the same size decode the same pixels (TurboJPEG takes the
/// largest of them). The EXIF orientation is not applied (Pillow's `Image.open` does not
/// either).
///
/// Throws `UsageError` naming `source` for a `scale` not in `jpeg_scales()`, `channels` other
/// than 1 or 3, or `out` of another size; `InputError` naming `source` and TurboJPEG's message
/// for what `read_jpeg_header` refuses, for CMYK and YCCK JPEGs (not converted), and for
/// corrupt or truncated data, libjpeg-turbo's warnings ("Premature end of JPEG file",
/// "Corrupt JPEG data: ...") included: `out` then holds a partial image.
inline ImageShape decode_jpeg_into(std::span<const std::uint8_t> bytes, std::string_view source,
                                   JpegScale scale, std::uint32_t channels,
                                   std::span<std::uint8_t> out) {
  const JpegHeader header = detail::checked_jpeg_header(bytes, source, scale, channels);
  const ImageShape shape = jpeg_scaled_shape(header, scale, channels);
  if (out.size() != shape.bytes()) {
    throw UsageError("stoke: " + detail::jpeg_context(source) + ": the output holds " +
                     std::to_string(out.size()) + " bytes, not the " +
                     std::to_string(shape.bytes()) + " of " + std::to_string(shape.height) + "x" +
                     std::to_string(shape.width) + "x" + std::to_string(channels) + " pixels");
  }
  detail::decompress_jpeg(bytes, source, shape, out);
  return shape;
}

/// Decodes the rows and columns `wanted` of the JPEG `bytes` reduced by `scale` (their
/// coordinates in the pixels of that reduced image, `jpeg_scaled_shape`) into `out`, resized
/// to what is decoded; returns the view of it. Only what `wanted` needs is decoded:
/// `jpeg_crop_scanline` widens the columns on the left to a whole iMCU (8 to 32 pixels at full
/// scale: 8 times the horizontal sampling factor, times the scale), so the view's `left` may
/// be less than `wanted.left`; the rows above are skipped (`jpeg_skip_scanlines`: entropy
/// decoded, not transformed), the rows below not decoded (libjpeg reads one iMCU row past the
/// region for the upsampler's context, no more). A progressive JPEG is decoded whole (libjpeg
/// reads all its scans first anyway, and smooths blocks across the region's edges where scans
/// leave coefficients unrefined): the view is then the full rows that hold `wanted`.
///
/// **Against `decode_jpeg_into`.** Every row of the view equals the full decode's at the same
/// place, and every column but the outermost two: libjpeg's fancy upsampling of horizontally
/// subsampled chroma (4:2:0, 4:2:2) blends each chroma sample with its neighbours, and past
/// the region's left or right edge it has none, so it repeats the edge sample. The first
/// column of a region that does not start at column 0, and the last of one that does not end
/// at the image's last column, may so differ (by up to 53 on the tests' images); 4:4:4, 4:4:0
/// and grey JPEGs, and grey output, differ nowhere. A region one column larger on each side
/// than the pixels a caller reads gives them exactly (`detail::region_column_margin`).
///
/// Throws what `decode_jpeg_into` throws, `UsageError` for a `wanted` not inside the image or
/// empty, and `InputError` naming `source` with libjpeg-turbo's message for corrupt data
/// in the rows decoded or skipped, and for a file with no end-of-image marker after its first
/// scan (cut short). Corrupt data in rows below the region is not seen: they are not read.
inline RegionView decode_jpeg_region(std::span<const std::uint8_t> bytes, std::string_view source,
                                     JpegScale scale, std::uint32_t channels, PixelRegion wanted,
                                     std::vector<std::uint8_t>& out) {
  const JpegHeader header = detail::checked_jpeg_header(bytes, source, scale, channels);
  const ImageShape whole = jpeg_scaled_shape(header, scale, channels);
  if (wanted.height == 0 || wanted.width == 0 || !PixelRegion::whole(whole).contains(wanted)) {
    throw UsageError(
        "stoke: " + detail::jpeg_context(source) + ": the region of " +
        std::to_string(wanted.height) + "x" + std::to_string(wanted.width) + " pixels at row " +
        std::to_string(wanted.top) + ", column " + std::to_string(wanted.left) +
        " is not inside the " + std::to_string(whole.height) + "x" + std::to_string(whole.width) +
        " pixels of the image at " + std::to_string(scale.num) + "/" + std::to_string(scale.denom));
  }
  return detail::decompress_jpeg_region(bytes, source, scale, whole, wanted, out);
}

}  // namespace stoke::images

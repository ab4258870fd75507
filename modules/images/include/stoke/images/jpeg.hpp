#pragma once
/// @file
/// JPEG decoding with libjpeg-turbo's TurboJPEG API: the header (`read_jpeg_header`), the DCT
/// scaling factors (`jpeg_scales`) and decoding at one of them into the caller's buffer
/// (`decode_jpeg_into`), to grey or RGB. Each thread decodes with a TurboJPEG handle of its
/// own, made on first use and freed when the thread ends.

#include <turbojpeg.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <stoke/core/error.hpp>
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
class TurboJpegDecompressor {
 public:
  TurboJpegDecompressor() = default;
  TurboJpegDecompressor(const TurboJpegDecompressor&) = delete;
  TurboJpegDecompressor& operator=(const TurboJpegDecompressor&) = delete;
  ~TurboJpegDecompressor() { reset(); }

  /// The handle, made on first use (and again after a failure).
  [[nodiscard]] tjhandle get() {
    if (handle_ == nullptr) {
      handle_ = tjInitDecompress();
      if (handle_ == nullptr) {
        throw Error(std::string("stoke: could not make a TurboJPEG decompressor: ") +
                    tjGetErrorStr2(nullptr));
      }
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
  if (tjDecompress2(decompressor.get(), bytes.data(), bytes.size(), out.data(),
                    static_cast<int>(shape.width), static_cast<int>(shape.width * shape.channels),
                    static_cast<int>(shape.height), shape.channels == 1 ? TJPF_GRAY : TJPF_RGB,
                    jpeg_decode_flags) != 0) {
    decompressor.fail(source, "decoding");
  }
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
  if (tjDecompressHeader3(decompressor.get(), bytes.data(), bytes.size(), &width, &height,
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
  const auto scales = jpeg_scales();
  if (std::find(scales.begin(), scales.end(), scale) == scales.end()) {
    throw UsageError("stoke: " + detail::jpeg_context(source) + ": " + std::to_string(scale.num) +
                     "/" + std::to_string(scale.denom) +
                     " is not one of TurboJPEG's scaling factors from 1/8 to 1 (jpeg_scales)");
  }
  if (channels != 1 && channels != 3) {
    throw UsageError("stoke: " + detail::jpeg_context(source) + ": cannot decode to " +
                     std::to_string(channels) + " channels (1: grey, 3: RGB)");
  }
  const JpegHeader header = read_jpeg_header(bytes, source);
  if (header.colorspace == JpegColorspace::cmyk || header.colorspace == JpegColorspace::ycck) {
    throw InputError("stoke: " + detail::jpeg_context(source) + " is a " +
                     (header.colorspace == JpegColorspace::cmyk ? "CMYK" : "YCCK") +
                     " JPEG; stoke decodes grey, YCbCr and RGB JPEGs only");
  }
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

}  // namespace stoke::images

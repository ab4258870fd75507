#pragma once
/// @file
/// Decoding a region of a JPEG with libjpeg-turbo's libjpeg API (TurboJPEG 2.x has no cropping
/// region): `jpeg_crop_scanline` for the columns, `jpeg_skip_scanlines` for the rows above,
/// and no decoding at all below. libjpeg reports errors by calling `error_exit`, which must
/// not return: each step here runs under its own `setjmp`, in a function whose locals are all
/// trivial, and `error_exit` (and `emit_message` for a corrupt-data warning, refused as
/// TurboJPEG's `TJFLAG_STOPONWARNING` does) `longjmp`s back to it with the message kept.
/// The caller turns a failed step into `InputError`, outside the jumped-over frames.

// jpeglib.h needs FILE and size_t declared before it.
#include <cstddef>
#include <cstdio>
// clang-format off
#include <jpeglib.h>
// clang-format on

#include <algorithm>
#include <csetjmp>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <stoke/core/error.hpp>
#include <stoke/images/detail/image_region.hpp>
#include <stoke/images/image.hpp>

namespace stoke::images::detail {

/// The most progressive scans a JPEG may have, as TurboJPEG's `TJFLAG_LIMITSCANS`.
inline constexpr int max_jpeg_scans = 500;

/// libjpeg's error manager with the jump back and the message of the failure.
struct LibjpegErrorManager {
  jpeg_error_mgr manager{};         ///< libjpeg's part; must come first
  std::jmp_buf jump{};              ///< where `error_exit` jumps to
  char message[JMSG_LENGTH_MAX]{};  ///< libjpeg's message of the failure
  bool warning = false;             ///< the failure was a corrupt-data warning
};

/// `error_exit`: keeps libjpeg's message and jumps back to the step that failed.
[[noreturn]] inline void libjpeg_error_exit(j_common_ptr info) {
  auto* error = reinterpret_cast<LibjpegErrorManager*>(info->err);
  (*info->err->format_message)(info, error->message);
  std::longjmp(error->jump, 1);
}

/// `emit_message`: a warning (level -1: corrupt data, a premature end) is a failure, as with
/// TurboJPEG's `TJFLAG_STOPONWARNING`; trace messages are ignored.
inline void libjpeg_emit_message(j_common_ptr info, int level) {
  if (level >= 0) return;
  auto* error = reinterpret_cast<LibjpegErrorManager*>(info->err);
  error->warning = true;
  (*info->err->format_message)(info, error->message);
  std::longjmp(error->jump, 1);
}

/// The progress monitor: refuses a progressive JPEG of more than `max_jpeg_scans` scans, as
/// TurboJPEG's `TJFLAG_LIMITSCANS` does.
inline void libjpeg_limit_scans(j_common_ptr info) {
  if (info->is_decompressor == 0) return;
  if (reinterpret_cast<j_decompress_ptr>(info)->input_scan_number > max_jpeg_scans) {
    auto* error = reinterpret_cast<LibjpegErrorManager*>(info->err);
    std::snprintf(error->message, sizeof error->message,
                  "Progressive JPEG image has more than %d scans", max_jpeg_scans);
    std::longjmp(error->jump, 1);
  }
}

/// A libjpeg decompressor of one thread, made anew for every image (`read_header`): libjpeg keeps
/// the tables of the last image, and a JPEG that uses a table it does not define would decode with
/// them (see `TurboJpegDecompressor`). Each step returns false when
/// libjpeg failed (then `message()` says why and `reset()` must be called before reuse).
/// Steps: `read_header`, `start`, then `crop` (optional), `skip`, `read`, and `finish`.
class LibjpegDecompressor {
 public:
  LibjpegDecompressor() = default;
  LibjpegDecompressor(const LibjpegDecompressor&) = delete;
  LibjpegDecompressor& operator=(const LibjpegDecompressor&) = delete;
  ~LibjpegDecompressor() { reset(); }

  /// Reads the header of the JPEG `bytes` and sets it up to be decompressed reduced by
  /// `scale_num / scale_denom` (as TurboJPEG sets them) to `channels` (1 grey, 3 RGB) with the
  /// accurate integer inverse DCT and fancy upsampling, as `tjDecompress2` does.
  /// `progressive()` then says whether it is progressive; `start` begins decompressing.
  [[nodiscard]] bool read_header(std::span<const std::uint8_t> bytes, std::uint32_t scale_num,
                                 std::uint32_t scale_denom, std::uint32_t channels) noexcept {
    reset();  // no table of the image before (see `TurboJpegDecompressor`)
    if (!make()) return false;
    error_.warning = false;
    error_.message[0] = '\0';
    if (setjmp(error_.jump) != 0) return false;
    jpeg_mem_src(&info_, bytes.data(), static_cast<unsigned long>(bytes.size()));  // NOLINT
    (void)jpeg_read_header(&info_, TRUE);
    info_.scale_num = scale_num;
    info_.scale_denom = scale_denom;
    info_.dct_method = JDCT_ISLOW;
    info_.do_fancy_upsampling = TRUE;
    info_.out_color_space = channels == 1 ? JCS_GRAYSCALE : JCS_RGB;
    scan_offset_ = static_cast<std::size_t>(info_.src->next_input_byte - bytes.data());
    return true;
  }

  /// Whether the JPEG whose header was read is progressive.
  [[nodiscard]] bool progressive() const noexcept { return info_.progressive_mode != 0; }

  /// Starts decompressing, once the header is read. The output size is then
  /// `output_height()` x `output_width()`.
  [[nodiscard]] bool start() noexcept {
    if (setjmp(error_.jump) != 0) return false;
    (void)jpeg_start_decompress(&info_);
    return true;
  }

  /// The output's rows, once started.
  [[nodiscard]] std::uint32_t output_height() const noexcept { return info_.output_height; }
  /// The output's columns, once started (the region's, once cropped).
  [[nodiscard]] std::uint32_t output_width() const noexcept { return info_.output_width; }
  /// The offset of the first scan's entropy-coded data in the bytes given to `start`.
  [[nodiscard]] std::size_t scan_offset() const noexcept { return scan_offset_; }

  /// Decodes only the columns `[left, left + width)`, widened by libjpeg to whole iMCU
  /// columns on the left (`left` and `width` are updated to what it decodes).
  [[nodiscard]] bool crop(std::uint32_t& left, std::uint32_t& width) noexcept {
    if (setjmp(error_.jump) != 0) return false;
    JDIMENSION x = left;
    JDIMENSION w = width;
    jpeg_crop_scanline(&info_, &x, &w);
    left = x;
    width = w;
    return true;
  }

  /// Skips the next `rows` rows without converting them.
  [[nodiscard]] bool skip(std::uint32_t rows) noexcept {
    if (setjmp(error_.jump) != 0) return false;
    JDIMENSION skipped = 0;
    while (skipped < rows) {
      const JDIMENSION now = jpeg_skip_scanlines(&info_, rows - skipped);
      if (now == 0) break;
      skipped += now;
    }
    return true;
  }

  /// Decodes the next `rows` rows into `out`, one every `stride` bytes, up to 16 rows a call
  /// (so that upsampled row groups are written in place, not through libjpeg's spare row).
  [[nodiscard]] bool read(std::uint8_t* out, std::uint32_t rows, std::size_t stride) noexcept {
    if (setjmp(error_.jump) != 0) return false;
    constexpr std::uint32_t kBatch = 16;
    JSAMPROW pointers[kBatch];
    for (std::uint32_t done = 0; done < rows;) {
      const std::uint32_t count = std::min(rows - done, kBatch);
      for (std::uint32_t i = 0; i < count; ++i) pointers[i] = out + std::size_t{done + i} * stride;
      const JDIMENSION read = jpeg_read_scanlines(&info_, pointers, count);
      if (read == 0) {
        std::snprintf(error_.message, sizeof error_.message,
                      "Premature end of JPEG file: row %u of the region could not be read", done);
        error_.warning = true;
        return false;
      }
      done += read;
    }
    return true;
  }

  /// Ends this image (not reading the rest) so that the next `start` can begin.
  void finish() noexcept {
    if (made_) jpeg_abort_decompress(&info_);
  }

  /// libjpeg's message of the last failure.
  [[nodiscard]] std::string_view message() const noexcept { return error_.message; }
  /// Whether the last failure was a corrupt-data warning.
  [[nodiscard]] bool warning() const noexcept { return error_.warning; }

  /// Frees the decompressor (after a failure: libjpeg's state is then not trusted).
  void reset() noexcept {
    if (made_) jpeg_destroy_decompress(&info_);
    made_ = false;
  }

 private:
  bool make() noexcept {
    info_.err = jpeg_std_error(&error_.manager);
    error_.manager.error_exit = libjpeg_error_exit;
    error_.manager.emit_message = libjpeg_emit_message;
    if (setjmp(error_.jump) != 0) {
      jpeg_destroy_decompress(&info_);
      return false;
    }
    jpeg_create_decompress(&info_);
    progress_.progress_monitor = libjpeg_limit_scans;
    info_.progress = &progress_;
    made_ = true;
    return true;
  }

  jpeg_decompress_struct info_{};
  LibjpegErrorManager error_;
  jpeg_progress_mgr progress_{};
  std::size_t scan_offset_ = 0;
  bool made_ = false;
};

/// This thread's libjpeg decompressor.
inline LibjpegDecompressor& thread_libjpeg_decompressor() {
  thread_local LibjpegDecompressor decompressor;
  return decompressor;
}

/// Whether `bytes` hold an end-of-image marker (ff d9) after `from`: a JPEG cut short has
/// none. Looks from the end back, where it is.
[[nodiscard]] inline bool has_end_of_image(std::span<const std::uint8_t> bytes,
                                           std::size_t from) noexcept {
  for (std::size_t i = bytes.size(); i >= from + 2 && i >= 2; --i) {
    if (bytes[i - 2] == 0xff && bytes[i - 1] == 0xd9) return true;
  }
  return false;
}

}  // namespace stoke::images::detail

#pragma once
/// @file
/// IDX files (the format of MNIST and Fashion-MNIST), plain or gzip-compressed:
/// `read_idx` for one array and `IdxClassificationDataset` for an images + labels pair.

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <memory>
#include <span>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include <stoke/core/detail/read_file.hpp>
#include <stoke/core/error.hpp>
#include <stoke/data/detail/dataset_view.hpp>
#include <stoke/data/labeled_image.hpp>

namespace stoke {
namespace detail {

/// The IDX type byte of unsigned bytes, the only element type stoke reads.
inline constexpr std::uint8_t idx_unsigned_byte = 0x08;

/// `'path'`, for error messages.
inline std::string idx_quoted(const std::filesystem::path& path) {
  return "'" + path.string() + "'";
}

/// `0x` and two hex digits per byte.
inline std::string idx_hex(std::span<const std::uint8_t> bytes) {
  std::string out = "0x";
  for (const std::uint8_t byte : bytes) {
    std::array<char, 3> digits{};
    std::snprintf(digits.data(), digits.size(), "%02x", static_cast<unsigned>(byte));
    out += digits.data();
  }
  return out;
}

/// The name of an IDX type byte, for error messages.
inline std::string idx_type_name(std::uint8_t type) {
  switch (type) {
    case 0x08:
      return "unsigned byte";
    case 0x09:
      return "signed byte";
    case 0x0B:
      return "int16";
    case 0x0C:
      return "int32";
    case 0x0D:
      return "float32";
    case 0x0E:
      return "float64";
    default:
      return "not an IDX type";
  }
}

/// The whole file at `path` (see `read_whole_file`).
inline std::vector<std::uint8_t> read_idx_file(const std::filesystem::path& path) {
  return read_whole_file<std::uint8_t>(path, "IDX");
}

/// Whether `bytes` starts with the gzip magic number `1f 8b`.
inline bool is_gzip(std::span<const std::uint8_t> bytes) noexcept {
  return bytes.size() >= 2 && bytes[0] == 0x1f && bytes[1] == 0x8b;
}

/// The decompressed content of the gzip stream `compressed` (concatenated members are joined;
/// anything after the last member that is not another member is ignored, as `gunzip` does).
/// Throws `InputError` naming the path and the compressed offset where the stream is corrupt
/// or ends early.
inline std::vector<std::uint8_t> gunzip_idx(std::span<const std::uint8_t> compressed,
                                            const std::filesystem::path& path) {
  const auto corrupt = [&](std::size_t offset, const std::string& why) {
    throw InputError("stoke: corrupt gzip stream in " + idx_quoted(path) +
                     " at compressed byte offset " + std::to_string(offset) + ": " + why);
  };
  std::vector<std::uint8_t> out;
  // The gzip trailer holds the size of the last member modulo 2^32: a hint, never trusted.
  if (compressed.size() >= 18) {
    const auto* tail = compressed.data() + compressed.size() - 4;
    const std::size_t hint = std::size_t{tail[0]} | std::size_t{tail[1]} << 8U |
                             std::size_t{tail[2]} << 16U | std::size_t{tail[3]} << 24U;
    out.reserve(std::min<std::size_t>(hint, std::size_t{1} << 30U));
  }
  z_stream stream{};
  if (inflateInit2(&stream, 16 + MAX_WBITS) != Z_OK) {
    throw InputError("stoke: cannot decompress " + idx_quoted(path) + ": " +
                     (stream.msg != nullptr ? stream.msg : "zlib initialisation failed"));
  }
  struct InflateEnd {
    z_stream* stream;
    ~InflateEnd() { inflateEnd(stream); }
  } end{&stream};

  std::size_t member_start = 0;  // compressed offset of the current member
  std::size_t consumed = 0;      // compressed bytes consumed in total
  constexpr std::size_t chunk = std::size_t{1} << 20U;
  while (true) {
    const std::size_t in_left = compressed.size() - consumed;
    stream.next_in = const_cast<Bytef*>(compressed.data() + consumed);
    stream.avail_in = static_cast<uInt>(std::min<std::size_t>(in_left, chunk));
    if (out.size() == out.capacity()) out.reserve(std::max<std::size_t>(chunk, out.size() * 2));
    const std::size_t filled = out.size();
    const std::size_t room = std::min(out.capacity() - filled, chunk);
    out.resize(filled + room);
    stream.next_out = out.data() + filled;
    stream.avail_out = static_cast<uInt>(room);
    const uInt in_before = stream.avail_in;
    const int result = inflate(&stream, Z_NO_FLUSH);
    out.resize(filled + room - stream.avail_out);
    consumed += in_before - stream.avail_in;
    if (result == Z_STREAM_END) {
      member_start = consumed;
      if (!is_gzip(compressed.subspan(consumed))) break;
      inflateReset(&stream);
      continue;
    }
    if (result == Z_BUF_ERROR && consumed == compressed.size()) {
      corrupt(consumed,
              "the stream ends before its end marker (the file is truncated; member "
              "started at offset " +
                  std::to_string(member_start) + ")");
    }
    if (result != Z_OK && result != Z_BUF_ERROR) {
      corrupt(consumed,
              stream.msg != nullptr ? stream.msg : "zlib error " + std::to_string(result));
    }
  }
  return out;
}

/// The shape and bytes of an IDX file, once decompressed.
struct IdxContent {
  std::vector<std::size_t> dims;
  std::size_t data_offset = 0;
};

/// Parses and validates the header of the (decompressed) IDX content `bytes` of `path`.
/// `where` is `""` for a plain file and `" of the decompressed data"` for a gzip one.
inline IdxContent parse_idx_header(std::span<const std::uint8_t> bytes,
                                   const std::filesystem::path& path, const std::string& where) {
  const auto fail = [&](const std::string& what) {
    throw InputError("stoke: IDX file " + idx_quoted(path) + ": " + what);
  };
  const std::string size_text = std::to_string(bytes.size());
  if (bytes.size() < 4) {
    fail("truncated header: " + size_text +
         " bytes, shorter than the 4-byte magic number; the "
         "file ends at offset " +
         size_text + where);
  }
  if (bytes[0] != 0 || bytes[1] != 0) {
    fail("wrong magic number " + idx_hex(bytes.first(4)) + " at offset 0" + where +
         ": expected two zero bytes, the type byte and the dimension count (0x0000TTDD)");
  }
  if (bytes[2] != idx_unsigned_byte) {
    fail("unsupported element type " + idx_hex(bytes.subspan(2, 1)) + " (" +
         idx_type_name(bytes[2]) + ") at offset 2" + where +
         "; only 0x08 (unsigned byte) is supported");
  }
  IdxContent content;
  const std::size_t rank = bytes[3];
  content.data_offset = 4 + 4 * rank;
  if (bytes.size() < content.data_offset) {
    fail("truncated header: " + std::to_string(rank) + " dimensions need " +
         std::to_string(content.data_offset) + " header bytes but the file ends at offset " +
         size_text + where);
  }
  std::size_t expected = 1;
  bool overflow = false;
  std::string shape;
  for (std::size_t d = 0; d < rank; ++d) {
    const std::uint8_t* field = bytes.data() + 4 + 4 * d;
    const std::uint32_t extent = std::uint32_t{field[0]} << 24U | std::uint32_t{field[1]} << 16U |
                                 std::uint32_t{field[2]} << 8U | std::uint32_t{field[3]};
    content.dims.push_back(extent);
    shape += (d == 0 ? "" : "x") + std::to_string(extent);
    if (extent != 0 && expected > std::numeric_limits<std::size_t>::max() / extent) overflow = true;
    expected *= extent;
  }
  if (overflow)
    fail("dimensions " + shape + " at offset 4" + where + " overflow the address space");
  const std::size_t present = bytes.size() - content.data_offset;
  const std::string expected_end = std::to_string(content.data_offset + expected);
  if (present < expected) {
    fail("truncated data: the header (dimensions " + shape + ") declares " +
         std::to_string(expected) + " data bytes from offset " +
         std::to_string(content.data_offset) + " but only " + std::to_string(present) +
         " are present; the data ends at offset " + size_text + where + ", expected " +
         expected_end);
  }
  if (present > expected) {
    fail(std::to_string(present - expected) + " unexpected bytes after the data: the header " +
         "(dimensions " + shape + ") declares " + std::to_string(expected) +
         " data bytes, ending at offset " + expected_end + where + ", but the file has " +
         size_text);
  }
  return content;
}

}  // namespace detail

/// One IDX array: its dimensions and its unsigned-byte elements (row-major). The bytes are
/// immutable and shared: copies are cheap and point at the same buffer.
class IdxArray {
 public:
  IdxArray() = default;

  /// The file it was read from.
  [[nodiscard]] const std::filesystem::path& path() const noexcept { return path_; }
  /// The extent of every dimension, outermost first.
  [[nodiscard]] const std::vector<std::size_t>& dims() const noexcept { return dims_; }
  /// The elements, row-major: the product of `dims()` bytes.
  [[nodiscard]] std::span<const std::uint8_t> data() const noexcept {
    if (!storage_) return {};
    return std::span<const std::uint8_t>(*storage_).subspan(data_offset_);
  }
  /// The offset of the first element in the (decompressed) file: `4 + 4 * dims().size()`.
  [[nodiscard]] std::size_t data_offset() const noexcept { return data_offset_; }
  /// Whether the file was gzip-compressed.
  [[nodiscard]] bool compressed() const noexcept { return compressed_; }

 private:
  friend IdxArray read_idx(const std::filesystem::path& path);

  std::filesystem::path path_;
  std::vector<std::size_t> dims_;
  std::shared_ptr<const std::vector<std::uint8_t>> storage_;
  std::size_t data_offset_ = 0;
  bool compressed_ = false;
};

/// Reads the IDX file at `path`, decompressing it first when it starts with the gzip magic
/// number. Throws `InputError` naming the path and the byte offset (of the decompressed data
/// for a gzip file) when the file is missing or unreadable, the gzip stream is corrupt, the
/// magic number is wrong, the element type is not unsigned byte, or the data is shorter or
/// longer than the header declares.
inline IdxArray read_idx(const std::filesystem::path& path) {
  auto bytes = detail::read_idx_file(path);
  IdxArray array;
  array.path_ = path;
  array.compressed_ = detail::is_gzip(bytes);
  if (array.compressed_) bytes = detail::gunzip_idx(bytes, path);
  auto content =
      detail::parse_idx_header(bytes, path, array.compressed_ ? " of the decompressed data" : "");
  array.dims_ = std::move(content.dims);
  array.data_offset_ = content.data_offset;
  array.storage_ = std::make_shared<const std::vector<std::uint8_t>>(std::move(bytes));
  return array;
}

/// An image classification dataset from a pair of IDX files, as MNIST and Fashion-MNIST ship
/// them: images (3 dimensions: count, rows, columns) and labels (1 dimension: count).
/// `get` returns a view into the shared decompressed buffer: nothing is copied after loading,
/// and copies of the dataset share the buffers.
class IdxClassificationDataset {
 public:
  /// Reads both files (see `read_idx`). Also throws `InputError` when the images file does
  /// not have 3 dimensions or the labels file not 1 (offset 3), and when the two counts
  /// differ (naming both files and both counts).
  IdxClassificationDataset(const std::filesystem::path& images, const std::filesystem::path& labels)
      : images_(read_idx(images)), labels_(read_idx(labels)) {
    check_rank(images_, 3, "images", "count, rows, columns");
    check_rank(labels_, 1, "labels", "count");
    if (images_.dims()[0] != labels_.dims()[0]) {
      throw InputError("stoke: images file " + detail::idx_quoted(images) + " holds " +
                       std::to_string(images_.dims()[0]) + " images but labels file " +
                       detail::idx_quoted(labels) + " holds " + std::to_string(labels_.dims()[0]) +
                       " labels (counts at offset 4 of each)");
    }
    image_size_ = images_.dims()[1] * images_.dims()[2];
  }

  /// Number of labelled images.
  [[nodiscard]] std::size_t size() const noexcept { return labels_.dims()[0]; }

  /// Image `index` (its pixels point into the shared buffer) with its label. Throws
  /// `UsageError` naming the index and the size when `index >= size()`.
  [[nodiscard]] LabeledImage get(std::size_t index) const {
    detail::check_index(index, size(), "IdxClassificationDataset");
    return {images_.data().subspan(index * image_size_, image_size_), labels_.data()[index]};
  }

  /// `{rows, columns}` of every image.
  [[nodiscard]] std::array<std::size_t, 2> image_shape() const noexcept {
    return {images_.dims()[1], images_.dims()[2]};
  }

  /// The images array (`count x rows x columns`).
  [[nodiscard]] const IdxArray& images() const noexcept { return images_; }
  /// The labels array (`count`).
  [[nodiscard]] const IdxArray& labels() const noexcept { return labels_; }

 private:
  static void check_rank(const IdxArray& array, std::size_t rank, const char* role,
                         const char* meaning) {
    if (array.dims().size() != rank) {
      throw InputError("stoke: " + std::string(role) + " file " + detail::idx_quoted(array.path()) +
                       " has " + std::to_string(array.dims().size()) +
                       " dimensions (dimension count at offset 3" +
                       (array.compressed() ? " of the decompressed data" : "") + "); expected " +
                       std::to_string(rank) + " (" + meaning + ")");
    }
  }

  IdxArray images_;
  IdxArray labels_;
  std::size_t image_size_ = 0;
};

}  // namespace stoke

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

#include <stoke/core/error.hpp>
#include <stoke/core/read_file.hpp>
#include <stoke/data/check_index.hpp>
#include <stoke/data/labeled_image.hpp>
#include <stoke/data/sources/detail/bounded_inflate.hpp>

namespace stoke {
namespace detail {

/// The IDX type byte of unsigned bytes, the only element type stoke reads.
inline constexpr std::uint8_t idx_unsigned_byte = 0x08;

/// `'path'`, for error messages.
inline std::string idx_quoted(const std::filesystem::path& path) {
  return "'" + path.string() + "'";
}

/// Throws `InputError` "stoke: IDX file '<path>': <what>".
[[noreturn]] inline void idx_fail(const std::filesystem::path& path, const std::string& what) {
  throw InputError("stoke: IDX file " + idx_quoted(path) + ": " + what);
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

/// What an IDX header says: the dimensions, where the data starts and how many bytes it has.
struct IdxHeader {
  std::vector<std::size_t> dims;
  std::size_t data_offset = 0;  ///< `4 + 4 * dims.size()`
  std::size_t data_size = 0;    ///< the product of `dims` (0 when one of them is 0)
  std::string shape;            ///< `dims` as "AxBxC", for error messages
  /// The offset where the data ends: the size of the whole (decompressed) file.
  [[nodiscard]] std::size_t end() const noexcept { return data_offset + data_size; }
};

/// Parses and validates the header at the start of the (decompressed) IDX content `bytes`
/// of `path`; the data after it is checked by `check_idx_data`. `where` is `""` for a plain
/// file and `" of the decompressed data"` for a gzip one. A dimension of 0 makes an empty
/// array whatever the others are; dimensions whose product does not fit in memory's address
/// space are refused.
inline IdxHeader parse_idx_header(std::span<const std::uint8_t> bytes,
                                  const std::filesystem::path& path, const std::string& where) {
  const auto fail = [&](const std::string& what) { idx_fail(path, what); };
  const std::string size_text = std::to_string(bytes.size());
  if (bytes.size() < 4) {
    fail("truncated header: " + size_text +
         " bytes, shorter than the 4-byte magic number; the file ends at offset " + size_text +
         where);
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
  IdxHeader header;
  const std::size_t rank = bytes[3];
  header.data_offset = 4 + 4 * rank;
  if (bytes.size() < header.data_offset) {
    fail("truncated header: " + std::to_string(rank) + " dimensions need " +
         std::to_string(header.data_offset) + " header bytes but the file ends at offset " +
         size_text + where);
  }
  bool empty = false;
  for (std::size_t d = 0; d < rank; ++d) {
    const std::uint8_t* field = bytes.data() + 4 + 4 * d;
    const std::uint32_t extent = std::uint32_t{field[0]} << 24U | std::uint32_t{field[1]} << 16U |
                                 std::uint32_t{field[2]} << 8U | std::uint32_t{field[3]};
    header.dims.push_back(extent);
    header.shape += (d == 0 ? "" : "x") + std::to_string(extent);
    empty = empty || extent == 0;
  }
  if (empty) return header;
  // The whole file, and one byte more (how a gzip reader sees that the data goes on), must
  // be addressable.
  const std::size_t limit = std::numeric_limits<std::size_t>::max() - header.data_offset - 1;
  header.data_size = 1;
  for (const std::size_t extent : header.dims) {
    if (header.data_size > limit / extent) {
      fail("dimensions " + header.shape + " at offset 4" + where +
           " declare more bytes than the address space holds");
    }
    header.data_size *= extent;
  }
  return header;
}

/// Checks that the (decompressed) content of `path`, `total_size` bytes, holds exactly the
/// data `header` declares.
inline void check_idx_data(const IdxHeader& header, std::size_t total_size,
                           const std::filesystem::path& path, const std::string& where) {
  const auto fail = [&](const std::string& what) { idx_fail(path, what); };
  const std::size_t present = total_size - header.data_offset;
  const std::string expected_end = std::to_string(header.end());
  if (present < header.data_size) {
    fail("truncated data: the header (dimensions " + header.shape + ") declares " +
         std::to_string(header.data_size) + " data bytes from offset " +
         std::to_string(header.data_offset) + " but only " + std::to_string(present) +
         " are present; the data ends at offset " + std::to_string(total_size) + where +
         ", expected " + expected_end);
  }
  if (present > header.data_size) {
    fail(std::to_string(present - header.data_size) +
         " unexpected bytes after the data: the header (dimensions " + header.shape +
         ") declares " + std::to_string(header.data_size) + " data bytes, ending at offset " +
         expected_end + where + ", but the file has " + std::to_string(total_size));
  }
}

/// Inflates a gzip file held in memory, member after member, only as far as asked: the IDX
/// reader decompresses the header, then exactly the data it declares (and one byte to see
/// whether more follows), so a small file cannot make it inflate more than it declares.
class GzipInflater {
 public:
  /// Starts inflating `compressed`, the bytes of the gzip file `path`.
  GzipInflater(std::span<const std::uint8_t> compressed, std::filesystem::path path)
      : compressed_(compressed), path_(std::move(path)) {
    if (inflateInit2(&stream_, 16 + MAX_WBITS) != Z_OK) {
      throw InputError("stoke: cannot decompress " + idx_quoted(path_) + ": " +
                       (stream_.msg != nullptr ? stream_.msg : "zlib initialisation failed"));
    }
  }
  GzipInflater(const GzipInflater&) = delete;
  GzipInflater& operator=(const GzipInflater&) = delete;
  ~GzipInflater() { inflateEnd(&stream_); }

  /// Appends decompressed bytes to `out` until it holds `want` bytes or the stream ends (then
  /// fewer). Throws `InputError` naming the compressed offset when the stream is corrupt or
  /// truncated, or when bytes that are no gzip member follow its last member.
  void fill(std::vector<std::uint8_t>& out, std::size_t want) {
    while (!ended_ && out.size() < want) {
      // Grows by doubling up to what is asked: never more memory than the data declared.
      const int result = inflate_some(stream_, std::as_bytes(compressed_), consumed_, out, want);
      if (result == Z_STREAM_END) {
        next_member();
      } else if (result == Z_BUF_ERROR && consumed_ == compressed_.size()) {
        corrupt(
            "the stream ends before its end marker (the file is truncated; member started "
            "at offset " +
            std::to_string(member_start_) + ")");
      } else if (result != Z_OK && result != Z_BUF_ERROR) {
        corrupt(stream_.msg != nullptr ? stream_.msg : "zlib error " + std::to_string(result));
      }
    }
  }

 private:
  /// After a member's end: the stream ends with the file, or another member follows.
  void next_member() {
    member_start_ = consumed_;
    const auto rest = compressed_.subspan(consumed_);
    if (rest.empty()) {
      ended_ = true;
    } else if (is_gzip(rest)) {
      inflateReset(&stream_);
    } else {
      corrupt(std::to_string(rest.size()) +
              " bytes follow the last gzip member and are not another member");
    }
  }

  [[noreturn]] void corrupt(const std::string& why) const {
    throw InputError("stoke: corrupt gzip stream in " + idx_quoted(path_) +
                     " at compressed byte offset " + std::to_string(consumed_) + ": " + why);
  }

  std::span<const std::uint8_t> compressed_;
  std::filesystem::path path_;
  z_stream stream_{};
  std::size_t consumed_ = 0;      ///< compressed bytes consumed in total
  std::size_t member_start_ = 0;  ///< compressed offset of the current member
  bool ended_ = false;
};

/// The decompressed content of the gzip IDX file `compressed` (concatenated members are
/// joined), inflated only as far as its header declares. Throws `InputError` naming the path
/// and the offset for a corrupt, truncated or overlong stream and for a bad header.
inline std::vector<std::uint8_t> gunzip_idx(std::span<const std::uint8_t> compressed,
                                            const std::filesystem::path& path) {
  const std::string where = " of the decompressed data";
  GzipInflater inflater(compressed, path);
  std::vector<std::uint8_t> out;
  inflater.fill(out, 4);
  if (out.size() == 4) inflater.fill(out, 4 + std::size_t{4} * out[3]);
  const IdxHeader header = parse_idx_header(out, path, where);
  inflater.fill(out, header.end() + 1);
  if (out.size() > header.end()) {
    idx_fail(path, "unexpected bytes after the data: the header (dimensions " + header.shape +
                       ") declares " + std::to_string(header.data_size) +
                       " data bytes, ending at offset " + std::to_string(header.end()) + where +
                       ", but the data goes on (decompression stopped there)");
  }
  return out;
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
/// for a gzip file) when the file is missing, unreadable or not a regular file, the gzip
/// stream is corrupt, truncated or followed by bytes that are no gzip member, the magic
/// number is wrong, the element type is not unsigned byte, or the data is shorter or longer
/// than the header declares. A gzip file is inflated only as far as its header declares (and
/// one byte more, to see that nothing follows), so memory never exceeds the declared size.
inline IdxArray read_idx(const std::filesystem::path& path) {
  auto bytes = detail::read_idx_file(path);
  IdxArray array;
  array.path_ = path;
  array.compressed_ = detail::is_gzip(bytes);
  if (array.compressed_) bytes = detail::gunzip_idx(bytes, path);
  const std::string where = array.compressed_ ? " of the decompressed data" : "";
  auto header = detail::parse_idx_header(bytes, path, where);
  detail::check_idx_data(header, bytes.size(), path, where);
  array.dims_ = std::move(header.dims);
  array.data_offset_ = header.data_offset;
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
    stoke::check_index(index, size(), "IdxClassificationDataset");
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

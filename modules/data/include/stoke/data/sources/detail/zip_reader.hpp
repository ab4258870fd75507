#pragma once
/// @file
/// The parts of the zip format an `.npz` file uses: the central directory (zip64 included),
/// local headers, and raw deflate streams inflated only as far as asked.

#include <zlib.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <stoke/core/error.hpp>
#include <stoke/data/sources/detail/bounded_inflate.hpp>

namespace stoke::detail {

/// The little-endian integer of `Size` bytes at `offset` of `bytes` (the caller checked the
/// range).
template <std::size_t Size>
std::uint64_t zip_le(std::span<const std::byte> bytes, std::size_t offset) {
  std::uint64_t value = 0;
  for (std::size_t i = Size; i-- > 0;) {
    value = value << 8U | std::to_integer<std::uint64_t>(bytes[offset + i]);
  }
  return value;
}

/// One member, as the central directory records it.
struct ZipEntry {
  std::string name;
  std::uint16_t flags = 0;
  std::uint16_t method = 0;
  std::uint32_t crc = 0;
  std::uint64_t compressed_size = 0;
  std::uint64_t uncompressed_size = 0;
  std::uint64_t local_offset = 0;  ///< offset of its local header
  std::size_t record_offset = 0;   ///< offset of its central directory record
};

/// The central directory of a zip file: its entries, and where it starts.
struct ZipDirectory {
  std::vector<ZipEntry> entries;
  std::size_t offset = 0;
};

/// Throws `InputError` "stoke: <file>: <what>".
[[noreturn]] inline void zip_fail(const std::string& file, const std::string& what) {
  throw InputError("stoke: " + file + ": " + what);
}

/// The zip64 fields of a central directory record's extra field `extra` (at `offset`) that the
/// record marks with all ones: the uncompressed size, the compressed size, the local offset.
inline void read_zip64_extra(std::span<const std::byte> extra, std::size_t offset, ZipEntry& entry,
                             const std::string& file) {
  std::uint64_t* fields[3] = {&entry.uncompressed_size, &entry.compressed_size,
                              &entry.local_offset};
  std::size_t wanted = 0;
  for (std::uint64_t* field : fields) wanted += *field == 0xFFFFFFFFU ? 8 : 0;
  if (wanted == 0) return;
  for (std::size_t at = 0; at + 4 <= extra.size();) {
    const auto id = zip_le<2>(extra, at);
    const auto size = static_cast<std::size_t>(zip_le<2>(extra, at + 2));
    if (at + 4 + size > extra.size()) break;
    if (id == 0x0001) {
      if (size < wanted) break;
      std::size_t field_at = at + 4;
      for (std::uint64_t* field : fields) {
        if (*field != 0xFFFFFFFFU) continue;
        *field = zip_le<8>(extra, field_at);
        field_at += 8;
      }
      return;
    }
    at += 4 + size;
  }
  zip_fail(file, "member '" + entry.name + "': its central directory record at offset " +
                     std::to_string(entry.record_offset) +
                     " marks sizes or offset as zip64 but its extra field at offset " +
                     std::to_string(offset) + " holds no complete zip64 field");
}

/// Reads the central directory of the zip file `bytes`, named `file` ("npz file 'a.npz'") in
/// errors: finds the end record (and the zip64 one where there is a locator), then every
/// record. Refuses a file that is not a zip, a multi-disk archive, and a truncated or
/// inconsistent directory, naming the offset.
inline ZipDirectory read_zip_directory(std::span<const std::byte> bytes, const std::string& file) {
  const auto fail = [&](const std::string& what) { zip_fail(file, what); };
  constexpr std::size_t end_size = 22;
  const std::size_t size = bytes.size();
  if (size < end_size) {
    fail("not a zip file: " + std::to_string(size) +
         " bytes, fewer than its 22-byte end of central directory record");
  }
  std::size_t end = size - end_size;
  const std::size_t lowest = size - end_size - std::min<std::size_t>(size - end_size, 0xFFFF);
  while (zip_le<4>(bytes, end) != 0x06054b50U ||
         end + end_size + zip_le<2>(bytes, end + 20) != size) {
    if (end == lowest) {
      fail("not a zip file: no end of central directory record in its last " +
           std::to_string(size - lowest) + " bytes (or the file is truncated)");
    }
    --end;
  }
  const std::string end_at =
      " (end of central directory record at offset " + std::to_string(end) + ")";
  std::uint64_t count = zip_le<2>(bytes, end + 10);
  std::uint64_t directory_size = zip_le<4>(bytes, end + 12);
  std::uint64_t directory_offset = zip_le<4>(bytes, end + 16);
  std::uint64_t limit = end;  // the directory ends before the end record
  if (end >= 20 && zip_le<4>(bytes, end - 20) == 0x07064b50U) {
    const std::uint64_t end64 = zip_le<8>(bytes, end - 12);
    if (end64 > end - 20 || end - 20 - end64 < 56 || zip_le<4>(bytes, end64) != 0x06064b50U) {
      fail("the zip64 locator at offset " + std::to_string(end - 20) + " points to offset " +
           std::to_string(end64) + ", where there is no zip64 end of central directory record");
    }
    const auto e = static_cast<std::size_t>(end64);
    if (zip_le<4>(bytes, e + 16) != 0 || zip_le<4>(bytes, e + 20) != 0) {
      fail("a multi-disk zip archive (zip64 end record at offset " + std::to_string(e) + ")");
    }
    count = zip_le<8>(bytes, e + 32);
    directory_size = zip_le<8>(bytes, e + 40);
    directory_offset = zip_le<8>(bytes, e + 48);
    limit = end64;
  } else if (count == 0xFFFF || directory_size == 0xFFFFFFFFU || directory_offset == 0xFFFFFFFFU) {
    fail("the end record marks zip64 values but no zip64 locator precedes it" + end_at);
  } else if (zip_le<2>(bytes, end + 4) != 0 || zip_le<2>(bytes, end + 6) != 0 ||
             zip_le<2>(bytes, end + 8) != count) {
    fail("a multi-disk zip archive" + end_at);
  }
  if (directory_offset > limit || directory_size > limit - directory_offset) {
    fail("truncated: the central directory of " + std::to_string(directory_size) +
         " bytes at offset " + std::to_string(directory_offset) + " does not end before offset " +
         std::to_string(limit) + end_at);
  }
  constexpr std::size_t record_size = 46;
  if (count > directory_size / record_size) {
    fail("the end record declares " + std::to_string(count) + " members, more than the " +
         std::to_string(directory_size) + "-byte central directory holds" + end_at);
  }
  ZipDirectory directory;
  directory.offset = static_cast<std::size_t>(directory_offset);
  const std::size_t directory_end = directory.offset + static_cast<std::size_t>(directory_size);
  directory.entries.reserve(static_cast<std::size_t>(count));
  std::size_t at = directory.offset;
  for (std::uint64_t i = 0; i < count; ++i) {
    const std::string where =
        "central directory record " + std::to_string(i) + " at offset " + std::to_string(at);
    if (directory_end - at < record_size || zip_le<4>(bytes, at) != 0x02014b50U) {
      fail("truncated or corrupt central directory: no " + where);
    }
    const auto name_size = static_cast<std::size_t>(zip_le<2>(bytes, at + 28));
    const auto extra_size = static_cast<std::size_t>(zip_le<2>(bytes, at + 30));
    const auto comment_size = static_cast<std::size_t>(zip_le<2>(bytes, at + 32));
    if (directory_end - at - record_size < name_size + extra_size + comment_size) {
      fail("truncated central directory: " + where + " goes past its end at offset " +
           std::to_string(directory_end));
    }
    ZipEntry entry;
    entry.record_offset = at;
    entry.flags = static_cast<std::uint16_t>(zip_le<2>(bytes, at + 8));
    entry.method = static_cast<std::uint16_t>(zip_le<2>(bytes, at + 10));
    entry.crc = static_cast<std::uint32_t>(zip_le<4>(bytes, at + 16));
    entry.compressed_size = zip_le<4>(bytes, at + 20);
    entry.uncompressed_size = zip_le<4>(bytes, at + 24);
    entry.local_offset = zip_le<4>(bytes, at + 42);
    entry.name.assign(reinterpret_cast<const char*>(bytes.data() + at + record_size), name_size);
    const std::size_t extra_at = at + record_size + name_size;
    read_zip64_extra(bytes.subspan(extra_at, extra_size), extra_at, entry, file);
    directory.entries.push_back(std::move(entry));
    at += record_size + name_size + extra_size + comment_size;
  }
  return directory;
}

/// The stored (possibly compressed) bytes of `entry` after its local header, and their offset.
struct ZipData {
  std::span<const std::byte> bytes;
  std::size_t offset = 0;
};

/// The compressed bytes of `entry` in the zip file `bytes`: checks its local header (its
/// signature, and that its name is the directory's) and that the data ends before the central
/// directory at `directory_offset`. `member` names it in errors.
inline ZipData zip_member_data(std::span<const std::byte> bytes, std::size_t directory_offset,
                               const ZipEntry& entry, const std::string& member) {
  const std::string local = "local header at offset " + std::to_string(entry.local_offset);
  constexpr std::size_t header_size = 30;
  if (entry.local_offset > directory_offset ||
      directory_offset - entry.local_offset < header_size ||
      zip_le<4>(bytes, static_cast<std::size_t>(entry.local_offset)) != 0x04034b50U) {
    zip_fail(member, "no " + local + " (truncated or corrupt)");
  }
  const auto at = static_cast<std::size_t>(entry.local_offset);
  const auto name_size = static_cast<std::size_t>(zip_le<2>(bytes, at + 26));
  const auto extra_size = static_cast<std::size_t>(zip_le<2>(bytes, at + 28));
  const std::size_t data_at = at + header_size + name_size + extra_size;
  if (data_at > directory_offset || entry.compressed_size > directory_offset - data_at) {
    zip_fail(member, "truncated: its " + std::to_string(entry.compressed_size) +
                         " stored bytes after its " + local +
                         " do not end before the central directory at offset " +
                         std::to_string(directory_offset));
  }
  const std::string_view name(reinterpret_cast<const char*>(bytes.data() + at + header_size),
                              name_size);
  if (name != entry.name) {
    zip_fail(member, "its " + local + " names '" + std::string(name) +
                         "', not the central directory's name");
  }
  return {bytes.subspan(data_at, static_cast<std::size_t>(entry.compressed_size)), data_at};
}

/// Inflates a raw deflate stream (a zip member) only as far as asked, so a small member cannot
/// make it allocate more than the data it really inflates to (and what the caller asks).
class ZipInflater {
 public:
  /// Starts inflating `compressed`; `member` names it in errors and `offset` is where it starts.
  ZipInflater(std::span<const std::byte> compressed, std::string member, std::size_t offset)
      : compressed_(compressed), member_(std::move(member)), offset_(offset) {
    if (inflateInit2(&stream_, -MAX_WBITS) != Z_OK) {
      zip_fail(member_, "cannot start zlib's inflate");
    }
  }
  ZipInflater(const ZipInflater&) = delete;
  ZipInflater& operator=(const ZipInflater&) = delete;
  ~ZipInflater() { inflateEnd(&stream_); }

  /// Appends inflated bytes to `out` until it holds `want` bytes or the stream ends (then
  /// fewer). Throws `InputError` naming the compressed offset when the stream is corrupt, or
  /// truncated (its stored bytes end before the stream does).
  void fill(std::vector<std::byte>& out, std::size_t want) {
    while (!ended_ && out.size() < want) {
      const int result = inflate_some(stream_, compressed_, consumed_, out, want);
      if (result == Z_STREAM_END) {
        ended_ = true;
      } else if (result == Z_BUF_ERROR && consumed_ == compressed_.size()) {
        corrupt("its stored bytes end before the deflate stream does (truncated)");
      } else if (result != Z_OK && result != Z_BUF_ERROR) {
        corrupt(stream_.msg != nullptr ? stream_.msg : "zlib error " + std::to_string(result));
      }
    }
  }

  /// Whether the stream has ended.
  [[nodiscard]] bool ended() const noexcept { return ended_; }
  /// Compressed bytes consumed so far.
  [[nodiscard]] std::size_t consumed() const noexcept { return consumed_; }

 private:
  [[noreturn]] void corrupt(const std::string& why) const {
    zip_fail(member_,
             "corrupt deflate data at offset " + std::to_string(offset_ + consumed_) + ": " + why);
  }

  std::span<const std::byte> compressed_;
  std::string member_;
  std::size_t offset_ = 0;
  z_stream stream_{};
  std::size_t consumed_ = 0;
  bool ended_ = false;
};

}  // namespace stoke::detail

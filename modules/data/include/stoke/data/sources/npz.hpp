#pragma once
/// @file
/// numpy's `.npz` files (zip archives of `.npy` arrays, from `np.savez` and
/// `np.savez_compressed`): `NpzFile` (a mapped archive), `npz_members` (the array names) and
/// `load_npz` (one array, stored members read in place whatever their alignment).

#include <zlib.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <initializer_list>
#include <limits>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <stoke/core/error.hpp>
#include <stoke/data/sources/array_shard.hpp>
#include <stoke/data/sources/detail/npy_header.hpp>
#include <stoke/data/sources/detail/zip_reader.hpp>
#include <stoke/data/sources/mmap_records.hpp>

namespace stoke {
namespace detail {

/// The bytes of an `.npz` archive (a mapped file, or an object fetched whole from a store), what
/// keeps them alive, its central directory, and how errors name it ("npz file 'a.npz'").
struct NpzArchive {
  std::span<const std::byte> bytes;
  std::shared_ptr<const void> owner;
  ZipDirectory directory;
  std::string label;
};

/// Reads the central directory of the archive `bytes`, kept alive by `owner`, named `label`.
inline NpzArchive open_npz(std::span<const std::byte> bytes, std::shared_ptr<const void> owner,
                           std::string label) {
  ZipDirectory directory = read_zip_directory(bytes, label);
  return {bytes, std::move(owner), std::move(directory), std::move(label)};
}

/// Maps `path` and reads its central directory.
inline NpzArchive map_npz(const std::filesystem::path& path) {
  auto mapping = std::make_shared<const FileMapping>(path);
  const std::span<const std::byte> bytes = mapping->bytes();
  return open_npz(bytes, std::move(mapping), "npz file " + quoted_path(path));
}

/// The array name of a member ending in ".npy", or "" for another member.
inline std::string_view npz_array_name(std::string_view member) {
  constexpr std::string_view suffix = ".npy";
  if (member.size() <= suffix.size() || !member.ends_with(suffix)) return {};
  return member.substr(0, member.size() - suffix.size());
}

/// "0x" and 8 hex digits.
inline std::string crc_hex(std::uint32_t crc) {
  char text[11];
  std::snprintf(text, sizeof text, "0x%08x", crc);
  return text;
}

/// Checks the CRC-32 of the member `label` (`parts` together) against `entry`'s.
inline void check_zip_crc(const ZipEntry& entry,
                          std::initializer_list<std::span<const std::byte>> parts,
                          const std::string& label) {
  uLong crc = crc32_z(0, nullptr, 0);
  for (const auto part : parts) {
    crc = crc32_z(crc, reinterpret_cast<const Bytef*>(part.data()), part.size());
  }
  if (crc != entry.crc) {
    zip_fail(label, "CRC-32 mismatch: its data has " + crc_hex(static_cast<std::uint32_t>(crc)) +
                        ", its central directory record at offset " +
                        std::to_string(entry.record_offset) + " says " + crc_hex(entry.crc));
  }
}

/// A stored member, read in place in the archive's bytes whatever its alignment. Its CRC-32 is
/// checked only with `check_crc`: a mapped file's member is not read until its rows are, but an
/// object fetched whole from a store is in memory already.
inline ArrayShard npz_stored(const NpzArchive& npz, const ZipEntry& entry, const ZipData& data,
                             const NpySource& source, std::filesystem::path shard_path,
                             bool check_crc) {
  if (entry.compressed_size != entry.uncompressed_size) {
    source.fail("a stored member whose sizes differ: " + std::to_string(entry.compressed_size) +
                " stored, " + std::to_string(entry.uncompressed_size) +
                " uncompressed (central directory record at offset " +
                std::to_string(entry.record_offset) + ")");
  }
  if (check_crc) check_zip_crc(entry, {data.bytes}, source.name);
  NpyLayout layout = parse_npy_layout(data.bytes, source);
  check_npy_data(layout, data.bytes.size(), source, "the member");
  return {std::move(shard_path), std::move(layout.info),
          data.bytes.subspan(layout.data_offset, layout.data_size), npz.owner};
}

/// A deflated member, inflated only as far as its npy header declares (and one byte more, to
/// see that nothing follows), then checked against its sizes and its CRC-32.
inline ArrayShard npz_deflated(const ZipEntry& entry, const ZipData& data, const NpySource& source,
                               std::filesystem::path shard_path) {
  ZipInflater inflater(data.bytes, source.name, data.offset);
  std::vector<std::byte> head;
  inflater.fill(head, npy_preamble_size);
  inflater.fill(head, parse_npy_preamble(head, source).data_offset);
  NpyLayout layout = parse_npy_layout(head, source);
  // The directory's uncompressed size must be exactly what the header declares.
  const std::string record =
      "its central directory record at offset " + std::to_string(entry.record_offset);
  if (entry.uncompressed_size < layout.data_offset) {
    source.fail("its header ends at offset " + std::to_string(layout.data_offset) +
                " of the member, but " + record + " says it holds " +
                std::to_string(entry.uncompressed_size) + " uncompressed bytes");
  }
  check_npy_data(layout, static_cast<std::size_t>(entry.uncompressed_size), source,
                 "the member, as " + record + " says,");
  // Deflate inflates at most 1032 bytes per byte: reserve no more than the stream can give.
  const std::size_t most = data.bytes.size() > (std::size_t{1} << 52U)
                               ? std::numeric_limits<std::size_t>::max()
                               : data.bytes.size() * 1032 + 65536;
  std::vector<std::byte> values;
  values.reserve(std::min(layout.data_size + 1, most));
  values.assign(head.begin() + static_cast<std::ptrdiff_t>(layout.data_offset), head.end());
  head.resize(layout.data_offset);
  inflater.fill(values, layout.data_size + 1);
  if (values.size() != layout.data_size) {
    const bool more = values.size() > layout.data_size;
    source.fail("its deflate data inflates to " + std::string(more ? "more than " : "") +
                std::to_string(layout.data_offset + std::min(values.size(), layout.data_size)) +
                " bytes, but its header and " + record + " say " +
                std::to_string(entry.uncompressed_size) +
                (more ? " (inflating stopped there)" : ""));
  }
  if (inflater.consumed() != data.bytes.size()) {
    source.fail(std::to_string(data.bytes.size() - inflater.consumed()) +
                " stored bytes follow the end of its deflate stream at offset " +
                std::to_string(data.offset + inflater.consumed()));
  }
  check_zip_crc(entry, {head, values}, source.name);
  return {std::move(shard_path), std::move(layout.info), std::move(values)};
}

/// The names of the arrays of `npz` (see `NpzFile::arrays`).
inline std::vector<std::string> npz_arrays(const NpzArchive& npz) {
  std::vector<std::string> names;
  for (const auto& entry : npz.directory.entries) {
    if (const auto name = npz_array_name(entry.name); !name.empty()) names.emplace_back(name);
  }
  return names;
}

/// The member `name.npy` of `npz`, else `name`, the last of that name in the directory; throws
/// `InputError` naming the archive and listing its arrays when there is none.
inline const ZipEntry& npz_entry(const NpzArchive& npz, const std::string& name) {
  const auto& entries = npz.directory.entries;
  auto found = std::find_if(entries.rbegin(), entries.rend(),
                            [&](const auto& e) { return e.name == name + ".npy"; });
  if (found == entries.rend()) {
    found = std::find_if(entries.rbegin(), entries.rend(),
                         [&](const auto& e) { return e.name == name; });
  }
  if (found == entries.rend()) {
    std::string listed;
    for (const auto& array : npz_arrays(npz)) {
      listed += (listed.empty() ? "'" : ", '") + array + "'";
    }
    throw InputError("stoke: " + npz.label + " has no array '" + name + "' (no member '" + name +
                     ".npy' in its central directory at offset " +
                     std::to_string(npz.directory.offset) +
                     "); its arrays: " + (listed.empty() ? "none" : listed));
  }
  return *found;
}

/// The array of the member `found` of `npz` (see `NpzFile::load`), its shard named
/// `shard_path`; `check_crc` checks a stored member's CRC-32 too (see `npz_stored`).
inline ArrayShard npz_load(const NpzArchive& npz, const ZipEntry& found,
                           std::filesystem::path shard_path, bool check_crc) {
  const std::string label = npz.label + ", member '" + found.name + "'";
  const std::string record =
      " (central directory record at offset " + std::to_string(found.record_offset) + ")";
  if ((found.flags & 1U) != 0) {
    zip_fail(label, "encrypted" + record + "; stoke reads unencrypted members");
  }
  if (found.method != 0 && found.method != Z_DEFLATED) {
    zip_fail(label, "compression method " + std::to_string(found.method) + record +
                        "; stoke reads stored (0) and deflate (8) members");
  }
  const ZipData data = zip_member_data(npz.bytes, npz.directory.offset, found, label);
  const NpySource source{label + " (data at offset " + std::to_string(data.offset) + ")",
                         " of the member"};
  if (found.method == 0) {
    return npz_stored(npz, found, data, source, std::move(shard_path), check_crc);
  }
  return npz_deflated(found, data, source, std::move(shard_path));
}

}  // namespace detail

/// An `.npz` file, mapped once and its central directory read: the names of its arrays,
/// whether each is read in place, and the arrays themselves, each an `ArrayShard`. Copies
/// share the mapping. The file must keep its size while it is mapped (see `load_npy`).
class NpzFile {
 public:
  /// Maps `path` and reads its central directory. Throws `InputError` naming the file and the
  /// offset when it is missing, not a regular file, not a zip file, a multi-disk archive, or
  /// its central directory (zip64 included) is truncated or corrupt.
  explicit NpzFile(const std::filesystem::path& path) : path_(path), npz_(detail::map_npz(path)) {}

  /// The file.
  [[nodiscard]] const std::filesystem::path& path() const noexcept { return path_; }

  /// The names of its arrays: its members whose names end in ".npy", without it, in the order
  /// of its central directory (other members are left out).
  [[nodiscard]] std::vector<std::string> arrays() const { return detail::npz_arrays(npz_); }

  /// Whether `load(name)` reads the array in place, viewing the mapped file: true for a stored
  /// member (`np.savez`), whatever the alignment of its data; false for a deflated one
  /// (`np.savez_compressed`), which `load` inflates into memory. Throws `InputError` as `load`
  /// does when there is no such member.
  [[nodiscard]] bool in_place(const std::string& name) const {
    return detail::npz_entry(npz_, name).method == 0;
  }

  /// The name of the member that holds the array `name` (`name.npy`, or `name` itself).
  /// Throws `InputError` as `load` does when there is no such member.
  [[nodiscard]] const std::string& member(const std::string& name) const {
    return detail::npz_entry(npz_, name).name;
  }

  /// The array `name` (the member `name.npy`, or `name` itself). A stored member
  /// (`np.savez`) is viewed in place in the mapping, whatever its alignment: zip archives
  /// seldom align a member's data for its element type, so read its rows through the
  /// alignment-safe accessors of `ArrayShard` (`values` needs `aligned()`). A deflated one
  /// (`np.savez_compressed`) is inflated only as far as its npy header declares. The shard's
  /// path is `path() / member`. Throws `InputError` naming the file, the member and the offset
  /// when there is no such member (listing the arrays there are); the member is encrypted,
  /// compressed by another method than deflate, truncated, or not a valid npy array (see
  /// `read_npy_info`); its sizes disagree with its central directory record; or its CRC-32
  /// does not match (checked where the member is inflated: a stored member read in place is
  /// not read at all until its rows are).
  [[nodiscard]] ArrayShard load(const std::string& name) const {
    const detail::ZipEntry& found = detail::npz_entry(npz_, name);
    return detail::npz_load(npz_, found, path_ / found.name, /*check_crc=*/false);
  }

 private:
  std::filesystem::path path_;
  detail::NpzArchive npz_;
};

/// The names of the arrays in the `.npz` file `path` (see `NpzFile::arrays`); throws what
/// `NpzFile`'s constructor throws.
inline std::vector<std::string> npz_members(const std::filesystem::path& path) {
  return NpzFile(path).arrays();
}

/// The array `name` of the `.npz` file `path` (see `NpzFile::load`): a stored member is read
/// in place in a mapping of the file whatever its alignment, a deflated one inflated. Throws
/// what `NpzFile`'s constructor and `NpzFile::load` throw.
inline ArrayShard load_npz(const std::filesystem::path& path, const std::string& name) {
  return NpzFile(path).load(name);
}

}  // namespace stoke

#pragma once
/// @file
/// Small writers of `.npy` files and zip archives (`.npz`) for the npy/npz tests and the fuzz
/// seeds: the bytes numpy writes, and the knobs to make them wrong.

#include <zlib.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

namespace stoke::testing {

/// Bytes of a file.
using FileBytes = std::vector<std::uint8_t>;

/// `bytes` as the `std::byte`s a file holds (what `TempDir::write` takes).
inline std::vector<std::byte> file_bytes(const FileBytes& bytes) {
  const auto* first = reinterpret_cast<const std::byte*>(bytes.data());
  return {first, first + bytes.size()};
}

/// Writes `bytes` as the file `name` of the test's directory `dir` (a `TempDir`); returns its
/// path.
template <class Directory>
std::filesystem::path write_file(const Directory& dir, const std::string& name,
                                 const FileBytes& bytes) {
  return dir.write(name, file_bytes(bytes));
}

/// An npy header dictionary as numpy writes it: `{'descr': '<f4', 'fortran_order': False,
/// 'shape': (3, 4), }`.
inline std::string npy_header(const std::string& descr, const std::vector<std::size_t>& shape,
                              bool fortran = false) {
  std::string dims;
  for (const std::size_t d : shape) dims += std::to_string(d) + ", ";
  if (shape.size() > 1) dims.resize(dims.size() - 2);
  if (shape.size() == 1) dims.resize(dims.size() - 1);
  return "{'descr': '" + descr + "', 'fortran_order': " + (fortran ? "True" : "False") +
         ", 'shape': (" + dims + "), }";
}

/// An npy file of format `version` (1, 2 or 3) holding `header` then `data`. The header is
/// padded with spaces and ends with a newline so that the data starts at a multiple of `align`
/// (numpy: 64), or, with `align` 0, left as it is.
inline FileBytes npy_file(std::string header, const FileBytes& data, int version = 1,
                          std::size_t align = 64) {
  const std::size_t preamble = version == 1 ? 10 : 12;
  if (align != 0) {
    header += '\n';
    while ((preamble + header.size()) % align != 0) header.insert(header.size() - 1, " ");
  }
  FileBytes out{0x93, 'N', 'U', 'M', 'P', 'Y', static_cast<std::uint8_t>(version), 0};
  for (std::size_t i = 0; i < preamble - 8; ++i) {
    out.push_back(static_cast<std::uint8_t>(header.size() >> (8 * i)));
  }
  out.insert(out.end(), header.begin(), header.end());
  out.insert(out.end(), data.begin(), data.end());
  return out;
}

/// The little-endian bytes of `values`.
template <class T>
FileBytes le_bytes(const std::vector<T>& values) {
  FileBytes out(values.size() * sizeof(T));
  if (!values.empty()) std::memcpy(out.data(), values.data(), out.size());
  return out;
}

/// One member of a zip archive written by `zip_file`.
struct ZipMember {
  std::string name;              ///< e.g. "x.npy"
  FileBytes content;             ///< the uncompressed bytes
  bool deflate = false;          ///< compressed with raw deflate (method 8), else stored
  std::size_t padding = 0;       ///< an extra field of this many bytes (0, or at least 4)
  std::uint16_t flags = 0;       ///< general purpose flags (bit 0: encrypted)
  int method = -1;               ///< the method written, when not the one used (8 or 0)
  bool wrong_crc = false;        ///< write a CRC-32 that does not match
  FileBytes trailing{};          ///< stored bytes after the compressed data, counted in its size
  std::string local_name{};      ///< the local header's name, when not `name`
  std::int64_t usize_delta = 0;  ///< added to the uncompressed size written
};

/// The raw deflate stream of `bytes`.
inline FileBytes raw_deflate(const FileBytes& bytes) {
  z_stream stream{};
  if (deflateInit2(&stream, 6, Z_DEFLATED, -MAX_WBITS, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
    throw std::runtime_error("deflateInit2 failed");
  }
  FileBytes out(deflateBound(&stream, bytes.size()));
  stream.next_in = const_cast<Bytef*>(bytes.data());
  stream.avail_in = static_cast<uInt>(bytes.size());
  stream.next_out = out.data();
  stream.avail_out = static_cast<uInt>(out.size());
  const int result = deflate(&stream, Z_FINISH);
  out.resize(stream.total_out);
  deflateEnd(&stream);
  if (result != Z_STREAM_END) throw std::runtime_error("deflate failed");
  return out;
}

/// A zip archive of `members`, as Python's zipfile writes it; with `zip64`, every size and
/// offset goes in zip64 extra fields and the archive ends with the zip64 end records.
inline FileBytes zip_file(const std::vector<ZipMember>& members, bool zip64 = false) {
  FileBytes out;
  const auto put = [&](FileBytes& to, std::uint64_t value, int size) {
    for (int i = 0; i < size; ++i) to.push_back(static_cast<std::uint8_t>(value >> (8 * i)));
  };
  const auto put_bytes = [](FileBytes& to, const auto& bytes) {
    to.insert(to.end(), bytes.begin(), bytes.end());
  };
  FileBytes directory;
  for (const ZipMember& m : members) {
    FileBytes data = m.deflate ? raw_deflate(m.content) : m.content;
    put_bytes(data, m.trailing);
    auto crc = static_cast<std::uint32_t>(crc32_z(0, m.content.data(), m.content.size()));
    if (m.wrong_crc) crc ^= 0x1234U;
    const std::uint64_t usize = m.content.size() + static_cast<std::uint64_t>(m.usize_delta);
    const std::uint64_t offset = out.size();
    const int method = m.method >= 0 ? m.method : (m.deflate ? 8 : 0);
    const std::string local_name = m.local_name.empty() ? m.name : m.local_name;
    FileBytes local_extra;
    if (zip64) {
      put(local_extra, 1, 2), put(local_extra, 16, 2);
      put(local_extra, usize, 8), put(local_extra, data.size(), 8);
    }
    if (m.padding != 0) {
      put(local_extra, 0xCAFE, 2), put(local_extra, m.padding - 4, 2);
      local_extra.resize(local_extra.size() + m.padding - 4);
    }
    put(out, 0x04034b50U, 4), put(out, 45, 2), put(out, m.flags, 2), put(out, method, 2);
    put(out, 0, 4), put(out, crc, 4);
    put(out, zip64 ? 0xFFFFFFFFU : data.size(), 4), put(out, zip64 ? 0xFFFFFFFFU : usize, 4);
    put(out, local_name.size(), 2), put(out, local_extra.size(), 2);
    put_bytes(out, local_name), put_bytes(out, local_extra), put_bytes(out, data);

    FileBytes extra;
    if (zip64) {
      put(extra, 1, 2), put(extra, 24, 2), put(extra, usize, 8), put(extra, data.size(), 8);
      put(extra, offset, 8);
    }
    put(directory, 0x02014b50U, 4), put(directory, 45, 2), put(directory, 45, 2);
    put(directory, m.flags, 2), put(directory, method, 2), put(directory, 0, 4);
    put(directory, crc, 4);
    put(directory, zip64 ? 0xFFFFFFFFU : data.size(), 4);
    put(directory, zip64 ? 0xFFFFFFFFU : usize, 4);
    put(directory, m.name.size(), 2), put(directory, extra.size(), 2), put(directory, 0, 2);
    put(directory, 0, 2), put(directory, 0, 2), put(directory, 0, 4);
    put(directory, zip64 ? 0xFFFFFFFFU : offset, 4);
    put_bytes(directory, m.name), put_bytes(directory, extra);
  }
  const std::uint64_t directory_offset = out.size();
  put_bytes(out, directory);
  if (zip64) {
    const std::uint64_t end64 = out.size();
    put(out, 0x06064b50U, 4), put(out, 44, 8), put(out, 45, 2), put(out, 45, 2);
    put(out, 0, 4), put(out, 0, 4), put(out, members.size(), 8), put(out, members.size(), 8);
    put(out, directory.size(), 8), put(out, directory_offset, 8);
    put(out, 0x07064b50U, 4), put(out, 0, 4), put(out, end64, 8), put(out, 1, 4);
  }
  put(out, 0x06054b50U, 4), put(out, 0, 2), put(out, 0, 2);
  put(out, zip64 ? 0xFFFF : members.size(), 2), put(out, zip64 ? 0xFFFF : members.size(), 2);
  put(out, zip64 ? 0xFFFFFFFFU : directory.size(), 4);
  put(out, zip64 ? 0xFFFFFFFFU : directory_offset, 4), put(out, 0, 2);
  return out;
}

}  // namespace stoke::testing

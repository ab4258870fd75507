#pragma once
/// @file
/// `save_npy`: writes an array as a numpy `.npy` file (version 1.0, C order, little-endian).

#include <cerrno>
#include <cstddef>
#include <filesystem>
#include <fstream>
#include <span>
#include <string>
#include <system_error>

#include <stoke/core/error.hpp>
#include <stoke/data/sources/array_shard.hpp>

namespace stoke {

/// The npy descr of `dtype`: `"<f4"`, `"|u1"`, ... (little-endian, as this machine stores it).
inline std::string npy_descr(DType dtype) {
  switch (dtype) {
    case DType::boolean:
      return "|b1";
    case DType::u8:
      return "|u1";
    case DType::i8:
      return "|i1";
    case DType::u16:
      return "<u2";
    case DType::i16:
      return "<i2";
    case DType::u32:
      return "<u4";
    case DType::i32:
      return "<i4";
    case DType::u64:
      return "<u8";
    case DType::i64:
      return "<i8";
    case DType::f32:
      return "<f4";
    case DType::f64:
      return "<f8";
  }
  return "";
}

/// Writes `bytes`, the row-major array `info`, to `path` as a `.npy` file that numpy and
/// `load_npy` read, its data aligned to 64 bytes. Throws `UsageError` when `bytes` do not hold
/// `info`'s shape, and `stoke::Error` naming the file and the system's reason when it cannot
/// be written.
inline void save_npy(const std::filesystem::path& path, const ArrayInfo& info,
                     std::span<const std::byte> bytes) {
  if (info.shape.empty() || bytes.size() != info.rows() * info.row_bytes()) {
    throw UsageError("stoke: save_npy('" + path.string() + "'): " + std::to_string(bytes.size()) +
                     " bytes for " + describe(info));
  }
  std::string shape;
  for (const std::size_t dimension : info.shape) shape += std::to_string(dimension) + ", ";
  if (info.shape.size() > 1)
    shape.resize(shape.size() - 1);  // "(3,)" but "(3, 4)"
  else
    shape.pop_back();
  std::string header = "{'descr': '" + npy_descr(info.dtype) +
                       "', 'fortran_order': False, 'shape': (" + shape + "), }";
  constexpr std::size_t preamble = 10;  // magic, version, header length
  const std::size_t padded = (preamble + header.size() + 1 + 63) / 64 * 64;
  header.append(padded - preamble - header.size() - 1, ' ').push_back('\n');
  if (header.size() > 0xFFFF) {
    throw UsageError("stoke: save_npy('" + path.string() + "'): a shape of " +
                     std::to_string(info.shape.size()) + " dimensions needs npy version 2.0");
  }
  errno = 0;
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  const char version[] = {'\x93',
                          'N',
                          'U',
                          'M',
                          'P',
                          'Y',
                          '\x01',
                          '\x00',
                          static_cast<char>(header.size() & 0xFF),
                          static_cast<char>(header.size() >> 8)};
  out.write(version, sizeof(version));
  out.write(header.data(), static_cast<std::streamsize>(header.size()));
  out.write(reinterpret_cast<const char*>(bytes.data()),
            static_cast<std::streamsize>(bytes.size()));
  out.close();
  if (!out) {
    const int error = errno;
    throw Error("stoke: cannot write '" + path.string() +
                "': " + (error != 0 ? std::generic_category().message(error) : "the write failed"));
  }
}

}  // namespace stoke

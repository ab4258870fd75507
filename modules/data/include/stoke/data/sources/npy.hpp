#pragma once
/// @file
/// numpy's `.npy` files: `read_npy_info` (type and shape), `load_npy` (the array, mapped in
/// place), `load_npy_rows` (some rows), `npy_format` (for `ShardedArrays`) and `NpyDataset`
/// (its rows as a dataset).

#include <cstddef>
#include <filesystem>
#include <memory>
#include <span>
#include <string>
#include <utility>

#include <stoke/core/error.hpp>
#include <stoke/data/check_index.hpp>
#include <stoke/data/sources/array_shard.hpp>
#include <stoke/data/sources/detail/npy_header.hpp>
#include <stoke/data/sources/mmap_records.hpp>
#include <stoke/data/sources/sharded_arrays.hpp>

namespace stoke {

/// The longest npy header stoke reads: 1 MiB (numpy writes a few hundred bytes and reads at
/// most 10000 unless told otherwise). A longer declared header is refused before it is read.
inline constexpr std::size_t npy_max_header = detail::npy_header_limit;

namespace detail {

/// The mapped file `path` and the layout of the npy array in it, checked whole.
struct MappedNpy {
  std::shared_ptr<const FileMapping> mapping;
  NpyLayout layout;
};

/// Maps `path` and checks its header and the size of its data.
inline MappedNpy map_npy(const std::filesystem::path& path) {
  auto mapping = std::make_shared<const FileMapping>(path);
  const NpySource source{"npy file " + quoted_path(path), ""};
  NpyLayout layout = parse_npy_layout(mapping->bytes(), source);
  check_npy_data(layout, mapping->bytes().size(), source, "the file");
  return {std::move(mapping), std::move(layout)};
}

}  // namespace detail

/// The element type and shape of the `.npy` file `path`, from its header (versions 1.0, 2.0
/// and 3.0). Throws `InputError` naming the file and the byte offset when it is missing or not
/// a regular file; the magic string or the version is wrong; the header is truncated, longer
/// than the file or than `npy_max_header`, or malformed; the dtype is big-endian, an object,
/// structured or not one of `DType`'s (little-endian `<f4 <f8 <u2 <i2 <u4 <i4 <u8 <i8`, and
/// `|u1 |i1 |b1`); the array is in Fortran order or 0-d; its bytes overflow the address
/// space; or the data after the header is shorter or longer than the shape needs.
inline ArrayInfo read_npy_info(const std::filesystem::path& path) {
  return detail::map_npy(path).layout.info;
}

/// The array in the `.npy` file `path`, memory-mapped: the shard views the mapping without a
/// copy (its owner keeps the mapping alive), whatever the alignment of the data (numpy aligns
/// it; see `ArrayShard::aligned`). Refuses what `read_npy_info` refuses.
/// The file must keep its size while it is mapped (see `MmapRecordDataset`); `bool` data is
/// not checked (each byte must be 0 or 1, as numpy writes it).
inline ArrayShard load_npy(const std::filesystem::path& path) {
  detail::MappedNpy npy = detail::map_npy(path);
  const auto data = npy.mapping->bytes().subspan(npy.layout.data_offset, npy.layout.data_size);
  return {path, std::move(npy.layout.info), data, std::move(npy.mapping)};
}

/// Rows `[first, first + count)` of the `.npy` file `path`, viewing the mapped file: only the
/// pages of those rows are read. Refuses what `load_npy` refuses, and rows out of range.
inline ArrayShard load_npy_rows(const std::filesystem::path& path, std::size_t first,
                                std::size_t count) {
  detail::MappedNpy npy = detail::map_npy(path);
  const ArrayInfo& info = npy.layout.info;
  if (first > info.rows() || count > info.rows() - first) {
    throw InputError("stoke: npy file " + detail::quoted_path(path) + " has " +
                     std::to_string(info.rows()) + " rows, not rows [" + std::to_string(first) +
                     ", " + std::to_string(first + count) + ")");
  }
  ArrayInfo rows = info;
  rows.shape.front() = count;
  const auto data = npy.mapping->bytes().subspan(npy.layout.data_offset + first * info.row_bytes(),
                                                 count * info.row_bytes());
  return {path, std::move(rows), data, std::move(npy.mapping)};
}

/// How `ShardedArrays` reads `.npy` files: the header at open, the whole file mapped when a
/// shard is needed, a few rows mapped for the head of a window.
inline ArrayFileFormat npy_format() {
  return {.info = [](const std::filesystem::path& path) { return read_npy_info(path); },
          .load = [](const std::filesystem::path& path) { return load_npy(path); },
          .read_rows = [](const std::filesystem::path& path, std::size_t first,
                          std::size_t count) { return load_npy_rows(path, first, count); }};
}

/// The rows of one `.npy` file (along its first axis) as a dataset of `ArrayRow<T>`, each
/// viewing the mapped file without a copy (a copy of the row where the data is not aligned,
/// which numpy never writes). Copies share the mapping.
template <class T>
class NpyDataset {
 public:
  /// Maps `path` (see `load_npy`); also throws `InputError` naming the file, its dtype and
  /// `T`'s when the file does not hold `T`.
  explicit NpyDataset(const std::filesystem::path& path) : rows_(checked(load_npy(path))) {}

  /// Samples: the first dimension.
  [[nodiscard]] std::size_t size() const noexcept { return rows_.size(); }
  /// Row `index`; throws `UsageError` naming the index and the size when out of range.
  [[nodiscard]] ArrayRow<T> get(std::size_t index) const {
    stoke::check_index(index, size(), "NpyDataset");
    return rows_.get(index);
  }
  /// Element type and shape.
  [[nodiscard]] const ArrayInfo& info() const noexcept { return rows_.info(); }
  /// The shard.
  [[nodiscard]] const ArrayShard& shard() const noexcept { return rows_.shard(); }

 private:
  static ArrayShard checked(ArrayShard shard) {
    if (shard.info().dtype != dtype_of<T>()) {
      throw InputError("stoke: npy file " + detail::quoted_path(shard.path()) + " holds " +
                       describe(shard.info()) + ", not the " + dtype_name(dtype_of<T>()) +
                       " this NpyDataset reads");
    }
    return shard;
  }

  ArrayDataset<T> rows_;
};

}  // namespace stoke

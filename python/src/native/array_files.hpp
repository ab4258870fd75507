#pragma once
/// @file
/// Array files read in place for `stoke_loader`: `.npy` files and the members of `.npz` files
/// as NumPy arrays viewing the mapped file (`shard_array`), and many such files as one column
/// of rows (`ShardColumn`, over stoke's `ShardedArrays` and its read-ahead shard cache).

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include <nanobind/ndarray.h>

#include <stoke/core/error.hpp>
#include <stoke/data/dlpack_types.hpp>
#include <stoke/data/sources/array_shard.hpp>
#include <stoke/data/sources/npy.hpp>
#include <stoke/data/sources/npz.hpp>
#include <stoke/data/sources/sharded_arrays.hpp>

#include "rows.hpp"

namespace stoke_python {

// stoke's DLPack codes (stoke/data/dlpack_types.hpp) are nanobind's, which are dlpack.h's.
static_assert(static_cast<std::uint8_t>(stoke::dlpack::TypeCode::signed_integer) ==
              static_cast<std::uint8_t>(nb::dlpack::dtype_code::Int));
static_assert(static_cast<std::uint8_t>(stoke::dlpack::TypeCode::unsigned_integer) ==
              static_cast<std::uint8_t>(nb::dlpack::dtype_code::UInt));
static_assert(static_cast<std::uint8_t>(stoke::dlpack::TypeCode::floating) ==
              static_cast<std::uint8_t>(nb::dlpack::dtype_code::Float));
static_assert(static_cast<std::uint8_t>(stoke::dlpack::TypeCode::boolean) ==
              static_cast<std::uint8_t>(nb::dlpack::dtype_code::Bool));

/// The DLPack type of stoke's element type `dtype` (stoke's one mapping,
/// `stoke::dlpack::data_type`), as nanobind spells it.
inline nb::dlpack::dtype dlpack_dtype(stoke::DType dtype) {
  const stoke::dlpack::DataType type = stoke::dlpack::data_type(dtype);
  return {type.code, type.bits, type.lanes};
}

/// The member `member` of the `.npz` file `path` (stoke's `NpzFile::load`). A stored member
/// (`np.savez`) is read in place from the mapped file, whatever its alignment. A deflated one
/// (`np.savez_compressed`) cannot be: unless `inflate`, it is refused with an `InputError`
/// naming the file and the member; with `inflate`, it is inflated into memory (a copy).
inline stoke::ArrayShard npz_member(const std::filesystem::path& path, const std::string& member,
                                    bool inflate) {
  const stoke::NpzFile npz(path);
  if (!inflate && !npz.in_place(member)) {
    throw stoke::InputError(
        "stoke_loader: npz file '" + path.string() + "', member '" + npz.member(member) +
        "' is compressed (np.savez_compressed): it cannot be read in place. Save it with "
        "np.savez, or pass inflate=True to inflate it into memory (a copy)");
  }
  return npz.load(member);
}

/// How `ShardedArrays` reads the member `member` of `.npz` files (see `npz_member`).
inline stoke::ArrayFileFormat npz_format(std::string member, bool inflate) {
  return {
      .info =
          [member, inflate](const std::filesystem::path& path) {
            return npz_member(path, member, inflate).info();
          },
      .load = [member, inflate](
                  const std::filesystem::path& path) { return npz_member(path, member, inflate); }};
}

/// `shard`'s values as a read-only NumPy array viewing them (the mapped file, for a `.npy`
/// file or a stored `.npz` member, at any alignment): the array keeps the shard's memory alive.
inline nb::ndarray<nb::numpy, nb::ro> shard_array(const stoke::ArrayShard& shard) {
  auto* held = new std::shared_ptr<const void>(shard.owner());
  nb::capsule capsule(
      held, [](void* p) noexcept { delete static_cast<std::shared_ptr<const void>*>(p); });
  const stoke::ArrayInfo& info = shard.info();
  return {shard.bytes().data(),     info.shape.size(),     info.shape.data(), capsule, nullptr,
          dlpack_dtype(info.dtype), nb::device::cpu::value};
}

/// The rows of many array files (`.npy` files, one member of `.npz` files, or an HDF5 variable)
/// as one column: stoke's `ShardedArrays`, whose shard cache keeps at most `resident` files
/// open and reads the next ones of the epoch ahead. A row is copied from its shard (mapped in
/// place for `.npy` files and stored `.npz` members) straight into the batch.
template <class T>
class ShardColumn final : public Column {
 public:
  /// The column `name` over `arrays`.
  ShardColumn(std::string name, stoke::ShardedArrays<T> arrays)
      : Column(std::move(name), dlpack_dtype(stoke::dtype_of<T>()), arrays.info().row_shape()),
        arrays_(std::move(arrays)) {
    set_rows(arrays_.size());
  }

  /// The column `name` over `arrays` whose rows are read as rows of `row_shape` elements of
  /// `dtype` (fixed-size records: rows of bytes, `T` being `std::uint8_t`). Throws `UsageError`
  /// when such a row is not as many bytes as a row of `arrays`.
  ShardColumn(std::string name, nb::dlpack::dtype dtype, std::vector<std::size_t> row_shape,
              stoke::ShardedArrays<T> arrays)
      : Column(std::move(name), dtype, std::move(row_shape)), arrays_(std::move(arrays)) {
    if (row_bytes() != arrays_.info().row_bytes()) {
      throw stoke::UsageError("stoke_loader: column '" + this->name() + "' has rows of " +
                              std::to_string(row_bytes()) + " bytes, its shards rows of " +
                              std::to_string(arrays_.info().row_bytes()));
    }
    set_rows(arrays_.size());
  }

  void copy_rows(std::span<const std::size_t> indices, std::size_t /*first_row*/,
                 std::byte* out) const override {
    const std::size_t bytes = row_bytes();
    for (const std::size_t index : indices) {
      try {
        arrays_.copy_row(index, {out, bytes});
      } catch (const stoke::Error& error) {
        throw stoke::InputError("stoke_loader: column '" + name() + "', row " +
                                std::to_string(index) + ": " + error.what());
      }
      out += bytes;
    }
  }

  [[nodiscard]] const std::vector<std::size_t>* shard_begins() const override {
    return &arrays_.shard_begins();
  }
  void read_ahead(std::span<const std::size_t> shards) const override {
    arrays_.read_ahead(shards);
  }

  /// The files, one shard each.
  [[nodiscard]] const std::vector<std::filesystem::path>& files() const noexcept {
    return arrays_.files();
  }

 private:
  stoke::ShardedArrays<T> arrays_;
};

/// A `ShardColumn` over `files` read with `format`, of the element type the first file holds.
/// Throws `InputError` naming the file when one cannot be read or does not match the first.
inline std::shared_ptr<Column> make_shard_column(std::string name,
                                                 std::vector<std::filesystem::path> files,
                                                 const stoke::ArrayFileFormat& format,
                                                 stoke::ShardCacheOptions cache) {
  if (files.empty()) throw stoke::UsageError("stoke_loader: shards: no file");
  const stoke::DType dtype = format.info(files.front()).dtype;
  const auto make = [&]<class T>() -> std::shared_ptr<Column> {
    return std::make_shared<ShardColumn<T>>(
        std::move(name), stoke::ShardedArrays<T>(std::move(files), format, cache));
  };
  using stoke::DType;
  switch (dtype) {
    case DType::boolean:
      return make.template operator()<bool>();
    case DType::u8:
      return make.template operator()<std::uint8_t>();
    case DType::i8:
      return make.template operator()<std::int8_t>();
    case DType::u16:
      return make.template operator()<std::uint16_t>();
    case DType::i16:
      return make.template operator()<std::int16_t>();
    case DType::u32:
      return make.template operator()<std::uint32_t>();
    case DType::i32:
      return make.template operator()<std::int32_t>();
    case DType::u64:
      return make.template operator()<std::uint64_t>();
    case DType::i64:
      return make.template operator()<std::int64_t>();
    case DType::f32:
      return make.template operator()<float>();
    case DType::f64:
      return make.template operator()<double>();
  }
  throw stoke::UsageError("stoke_loader: unknown element type");
}

}  // namespace stoke_python

#pragma once
/// @file
/// Array files read in place for `stoke_loader`: `.npy` files and the members of `.npz` files
/// as NumPy arrays viewing the mapped file (`shard_array`), and many such files as one column
/// of rows (`ShardColumn`, over stoke's `ShardedArrays` and its read-ahead shard cache).

#include <zlib.h>

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
#include <stoke/data/sources/array_shard.hpp>
#include <stoke/data/sources/npy.hpp>
#include <stoke/data/sources/npz.hpp>
#include <stoke/data/sources/sharded_arrays.hpp>

#include "rows.hpp"

namespace stoke_python {

/// The DLPack type of stoke's element type `dtype`.
inline nb::dlpack::dtype dlpack_dtype(stoke::DType dtype) {
  using stoke::DType;
  const auto bits = static_cast<std::uint8_t>(stoke::dtype_size(dtype) * 8);
  switch (dtype) {
    case DType::boolean:
      return {static_cast<std::uint8_t>(nb::dlpack::dtype_code::Bool), 8, 1};
    case DType::u8:
    case DType::u16:
    case DType::u32:
    case DType::u64:
      return {static_cast<std::uint8_t>(nb::dlpack::dtype_code::UInt), bits, 1};
    case DType::i8:
    case DType::i16:
    case DType::i32:
    case DType::i64:
      return {static_cast<std::uint8_t>(nb::dlpack::dtype_code::Int), bits, 1};
    case DType::f32:
    case DType::f64:
      return {static_cast<std::uint8_t>(nb::dlpack::dtype_code::Float), bits, 1};
  }
  throw stoke::UsageError("stoke_loader: unknown element type");
}

/// The member `member` of the `.npz` file `path` (stoke's `load_npz`). A stored member
/// (`np.savez`) is read in place from the mapped file. A deflated one (`np.savez_compressed`)
/// cannot be: unless `inflate`, it is refused with an `InputError` naming the file and the
/// member; with `inflate`, it is inflated into memory (a copy).
inline stoke::ArrayShard npz_member(const std::filesystem::path& path, const std::string& member,
                                    bool inflate) {
  if (!inflate) {
    const auto npz = stoke::detail::map_npz(path);
    for (const auto& entry : npz.directory.entries) {
      if ((entry.name == member + ".npy" || entry.name == member) && entry.method != 0) {
        throw stoke::InputError(
            "stoke_loader: npz file '" + path.string() + "', member '" + entry.name +
            "' is compressed (np.savez_compressed): it cannot be read in place. Save it with "
            "np.savez, or pass inflate=True to inflate it into memory (a copy)");
      }
    }
  }
  return stoke::load_npz(path, member);
}

/// A stored member of an `.npz` file, in place in the mapped file: its data may not be aligned
/// for its element type (the zip layout of `np.savez` seldom aligns it), which NumPy and a
/// row copy allow, but stoke's `ArrayShard` does not (stoke's `load_npz` copies such a member).
struct MappedMember {
  std::shared_ptr<const void> owner;  ///< the mapped file
  stoke::ArrayInfo info;              ///< type and shape
  std::span<const std::byte> data;    ///< the array's bytes, row-major
};

/// The stored member `member` of the `.npz` file `path`, viewing the mapped file. A compressed
/// member is refused naming the file and the member; anything else stoke's `load_npz` refuses
/// (no such member, encrypted, truncated, a bad npy header) is refused as it does.
inline MappedMember map_npz_member(const std::filesystem::path& path, const std::string& member) {
  const auto npz = stoke::detail::map_npz(path);
  const auto& entries = npz.directory.entries;
  auto found = std::find_if(entries.rbegin(), entries.rend(),
                            [&](const auto& e) { return e.name == member + ".npy"; });
  if (found == entries.rend()) {
    found = std::find_if(entries.rbegin(), entries.rend(),
                         [&](const auto& e) { return e.name == member; });
  }
  if (found == entries.rend() || (found->flags & 1U) != 0 ||
      (found->method != 0 && found->method != Z_DEFLATED)) {
    (void)stoke::load_npz(path, member);  // throws, as stoke words it
  }
  const auto& entry = *found;
  const std::string label = "npz file '" + path.string() + "', member '" + entry.name + "'";
  if (entry.method != 0) {
    throw stoke::InputError(
        "stoke_loader: " + label +
        " is compressed (np.savez_compressed): it cannot be read in place. Save it with "
        "np.savez, or pass inflate=True to inflate it into memory (a copy)");
  }
  const auto data =
      stoke::detail::zip_member_data(npz.mapping->bytes(), npz.directory.offset, entry, label);
  const stoke::detail::NpySource source{
      label + " (data at offset " + std::to_string(data.offset) + ")", " of the member"};
  if (entry.compressed_size != entry.uncompressed_size) {
    source.fail("a stored member whose sizes differ: " + std::to_string(entry.compressed_size) +
                " stored, " + std::to_string(entry.uncompressed_size) + " uncompressed");
  }
  stoke::detail::NpyLayout layout = stoke::detail::parse_npy_layout(data.bytes, source);
  stoke::detail::check_npy_data(layout, data.bytes.size(), source, "the member");
  return {npz.mapping, std::move(layout.info),
          data.bytes.subspan(layout.data_offset, layout.data_size)};
}

/// The stored member `member` of many `.npz` files as one column, rows laid end to end, each
/// read in place from its mapped file (no shard cache: the kernel's page cache is it).
class MemberColumn final : public Column {
 public:
  /// Maps `member` of every file of `files`; throws `InputError` naming the file and the member
  /// when one cannot be mapped or holds another type or row shape than the first.
  MemberColumn(std::string name, const std::vector<std::filesystem::path>& files,
               const std::string& member)
      : MemberColumn(std::move(name), map_all(files, member)) {}

  void copy_rows(std::span<const std::size_t> indices, std::size_t /*first_row*/,
                 std::byte* out) const override {
    const std::size_t bytes = row_bytes();
    for (const std::size_t index : indices) {
      const auto next = std::upper_bound(begins_.begin(), begins_.end(), index);
      const auto k = static_cast<std::size_t>(next - begins_.begin()) - 1;
      std::memcpy(out, members_[k].data.data() + (index - begins_[k]) * bytes, bytes);
      out += bytes;
    }
  }

  [[nodiscard]] const std::vector<std::size_t>* shard_begins() const override { return &begins_; }

 private:
  MemberColumn(std::string name, std::vector<MappedMember> members)
      : Column(std::move(name), dlpack_dtype(members.front().info.dtype),
               members.front().info.row_shape()),
        members_(std::move(members)) {
    std::size_t rows = 0;
    for (const auto& member : members_) {
      begins_.push_back(rows);
      rows += member.info.rows();
    }
    set_rows(rows);
  }

  static std::vector<MappedMember> map_all(const std::vector<std::filesystem::path>& files,
                                           const std::string& member) {
    if (files.empty()) throw stoke::UsageError("stoke_loader: shards: no file");
    std::vector<MappedMember> out;
    for (const auto& file : files) {
      out.push_back(map_npz_member(file, member));
      const auto& first = out.front().info;
      const auto& info = out.back().info;
      if (info.shape.empty()) {
        throw stoke::InputError("stoke_loader: npz file '" + file.string() + "', member '" +
                                member + "' holds a 0-dimensional array: no rows");
      }
      if (info.dtype != first.dtype || info.row_shape() != first.row_shape()) {
        throw stoke::InputError("stoke_loader: npz file '" + file.string() + "', member '" +
                                member + "' holds " + stoke::describe(info) +
                                ", whose rows differ from those in '" + files.front().string() +
                                "' (" + stoke::describe(first) + ")");
      }
    }
    return out;
  }

  std::vector<MappedMember> members_;
  std::vector<std::size_t> begins_;
};

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

/// The array `info` at `data` as a read-only NumPy array viewing it, keeping `owner` alive.
inline nb::ndarray<nb::numpy, nb::ro> view_array(const stoke::ArrayInfo& info, const void* data,
                                                 std::shared_ptr<const void> owner) {
  auto* held = new std::shared_ptr<const void>(std::move(owner));
  nb::capsule capsule(
      held, [](void* p) noexcept { delete static_cast<std::shared_ptr<const void>*>(p); });
  return {data,    info.shape.size(),        info.shape.data(),     capsule,
          nullptr, dlpack_dtype(info.dtype), nb::device::cpu::value};
}

/// `shard`'s values as a read-only NumPy array viewing them (the mapped file, for a `.npy`
/// file): the array keeps the shard's memory alive.
inline nb::ndarray<nb::numpy, nb::ro> shard_array(const stoke::ArrayShard& shard) {
  return view_array(shard.info(), shard.bytes().data(), shard.owner());
}

/// The rows of many array files (`.npy` files, or one member of `.npz` files) as one column:
/// stoke's `ShardedArrays`, whose shard cache keeps at most `resident` files open and reads
/// the next ones of the epoch ahead. A row is copied from its shard straight into the batch.
template <class T>
class ShardColumn final : public Column {
 public:
  /// The column `name` over `arrays`.
  ShardColumn(std::string name, stoke::ShardedArrays<T> arrays)
      : Column(std::move(name), dlpack_dtype(stoke::dtype_of<T>()), arrays.info().row_shape()),
        arrays_(std::move(arrays)) {
    set_rows(arrays_.size());
  }

  void copy_rows(std::span<const std::size_t> indices, std::size_t /*first_row*/,
                 std::byte* out) const override {
    const std::size_t bytes = row_bytes();
    for (const std::size_t index : indices) {
      try {
        const stoke::ArrayRow<T> row = arrays_.get(index);
        std::memcpy(out, row.values.data(), bytes);
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

#pragma once
/// @file
/// What every array file source gives (npy, npz, HDF5, NetCDF-4): `ArrayInfo` (element type and
/// shape), `ArrayShard` (the rows of one file, in memory or mapped, at any alignment) and
/// `ArrayDataset` (a dataset of its rows, each an `ArrayRow` viewing the shard without a copy
/// where it is aligned).

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <memory>
#include <span>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include <stoke/core/error.hpp>
#include <stoke/data/check_index.hpp>

namespace stoke {

/// The element types an array file may hold.
enum class DType : std::uint8_t { boolean, u8, i8, u16, i16, u32, i32, u64, i64, f32, f64 };

/// Bytes per element of `dtype`.
constexpr std::size_t dtype_size(DType dtype) noexcept {
  switch (dtype) {
    case DType::boolean:
    case DType::u8:
    case DType::i8:
      return 1;
    case DType::u16:
    case DType::i16:
      return 2;
    case DType::u32:
    case DType::i32:
    case DType::f32:
      return 4;
    case DType::u64:
    case DType::i64:
    case DType::f64:
      return 8;
  }
  return 0;
}

/// The name of `dtype` in errors: `"bool"`, `"uint8"`, ..., `"float32"`, `"float64"` (numpy's).
inline std::string dtype_name(DType dtype) {
  switch (dtype) {
    case DType::boolean:
      return "bool";
    case DType::u8:
      return "uint8";
    case DType::i8:
      return "int8";
    case DType::u16:
      return "uint16";
    case DType::i16:
      return "int16";
    case DType::u32:
      return "uint32";
    case DType::i32:
      return "int32";
    case DType::u64:
      return "uint64";
    case DType::i64:
      return "int64";
    case DType::f32:
      return "float32";
    case DType::f64:
      return "float64";
  }
  return "unknown";
}

/// The `DType` of the C++ element type `T`.
template <class T>
constexpr DType dtype_of() noexcept {
  if constexpr (std::is_same_v<T, bool>)
    return DType::boolean;
  else if constexpr (std::is_same_v<T, std::uint8_t>)
    return DType::u8;
  else if constexpr (std::is_same_v<T, std::int8_t>)
    return DType::i8;
  else if constexpr (std::is_same_v<T, std::uint16_t>)
    return DType::u16;
  else if constexpr (std::is_same_v<T, std::int16_t>)
    return DType::i16;
  else if constexpr (std::is_same_v<T, std::uint32_t>)
    return DType::u32;
  else if constexpr (std::is_same_v<T, std::int32_t>)
    return DType::i32;
  else if constexpr (std::is_same_v<T, std::uint64_t>)
    return DType::u64;
  else if constexpr (std::is_same_v<T, std::int64_t>)
    return DType::i64;
  else if constexpr (std::is_same_v<T, float>)
    return DType::f32;
  else if constexpr (std::is_same_v<T, double>)
    return DType::f64;
  else
    static_assert(sizeof(T) == 0, "stoke: no DType for this element type");
}

/// What an array holds: its element type and its shape, row-major; the first axis indexes
/// samples (time steps, images), the others are one sample's shape.
struct ArrayInfo {
  DType dtype = DType::f32;        ///< element type
  std::vector<std::size_t> shape;  ///< dimensions, outermost first (at least one)

  /// Samples: the first dimension (0 for a shape without dimensions).
  [[nodiscard]] std::size_t rows() const noexcept { return shape.empty() ? 0 : shape.front(); }
  /// Elements of one sample: the product of the other dimensions.
  [[nodiscard]] std::size_t row_elements() const noexcept {
    std::size_t count = 1;
    for (std::size_t d = 1; d < shape.size(); ++d) count *= shape[d];
    return count;
  }
  /// Bytes of one sample.
  [[nodiscard]] std::size_t row_bytes() const noexcept {
    return row_elements() * dtype_size(dtype);
  }
  /// The shape of one sample (all dimensions but the first).
  [[nodiscard]] std::vector<std::size_t> row_shape() const {
    return shape.empty() ? std::vector<std::size_t>{}
                         : std::vector<std::size_t>(shape.begin() + 1, shape.end());
  }

  friend bool operator==(const ArrayInfo&, const ArrayInfo&) = default;
};

/// `"float32 [24, 4, 32, 64]"`: an array's type and shape in errors.
inline std::string describe(const ArrayInfo& info) {
  std::string text = dtype_name(info.dtype) + " [";
  for (std::size_t d = 0; d < info.shape.size(); ++d) {
    text += (d == 0 ? "" : ", ") + std::to_string(info.shape[d]);
  }
  return text + "]";
}

/// One sample of an array source: the values of one row (or of consecutive rows), viewing the
/// shard they were read from (or a copy of them, where the shard is not aligned for `T`), which
/// `owner` keeps alive.
template <class T>
struct ArrayRow {
  std::span<const T> values;          ///< row-major values of the sample
  std::shared_ptr<const void> owner;  ///< keeps `values` valid
};

/// The rows of one array read from a file: in memory, or mapped. Copies share the bytes.
///
/// The bytes may lie at any address: a stored member of an `.npz` file is viewed in place
/// where the zip archive put it, which `np.savez` seldom aligns for its element type. Every
/// reader of rows copes: `row_bytes` (any alignment), `copy_values` (copies), `array_row` (a
/// view when aligned, else a copy of just those rows) and the datasets built on them
/// (`ArrayDataset`, `NpyDataset`, `ShardedArrays`). Only `values`, a typed view, needs
/// `aligned()`.
class ArrayShard {
 public:
  /// The array `info` of `path`, whose row-major bytes are `bytes`, at any address, kept alive
  /// by `owner`. Throws `InputError` naming the path when `bytes` do not hold exactly `info`'s
  /// shape.
  ArrayShard(std::filesystem::path path, ArrayInfo info, std::span<const std::byte> bytes,
             std::shared_ptr<const void> owner)
      : path_(std::move(path)), info_(std::move(info)), bytes_(bytes), owner_(std::move(owner)) {
    const std::size_t expected = info_.rows() * info_.row_bytes();
    if (bytes_.size() != expected) {
      throw InputError("stoke: '" + path_.string() + "' holds " + std::to_string(bytes_.size()) +
                       " bytes of data where " + describe(info_) + " needs " +
                       std::to_string(expected));
    }
  }

  /// Values of a temporary shard would dangle: keep the shard (or its owner) first.
  template <class T>
  std::span<const T> values(std::size_t first, std::size_t count = 1) const&& = delete;
  /// Bytes of a temporary shard would dangle: keep the shard (or its owner) first.
  std::span<const std::byte> row_bytes(std::size_t first, std::size_t count = 1) const&& = delete;

  /// An array held in `bytes` (moved into the shard).
  ArrayShard(std::filesystem::path path, ArrayInfo info, std::vector<std::byte> bytes)
      : ArrayShard(std::move(path), std::move(info), own(std::move(bytes))) {}

  /// The file it was read from.
  [[nodiscard]] const std::filesystem::path& path() const noexcept { return path_; }
  /// Element type and shape.
  [[nodiscard]] const ArrayInfo& info() const noexcept { return info_; }
  /// Samples (the first dimension).
  [[nodiscard]] std::size_t rows() const noexcept { return info_.rows(); }
  /// All the bytes, row-major, at any address (see `aligned`).
  [[nodiscard]] std::span<const std::byte> bytes() const noexcept { return bytes_; }
  /// What keeps the bytes alive: hold it to keep a view valid after the shard is gone.
  [[nodiscard]] const std::shared_ptr<const void>& owner() const noexcept { return owner_; }
  /// Whether the bytes are aligned for the element type, so that `values` can view them.
  [[nodiscard]] bool aligned() const noexcept {
    return reinterpret_cast<std::uintptr_t>(bytes_.data()) % dtype_size(info_.dtype) == 0;
  }

  /// The bytes of rows `[first, first + count)`, at any address: copy them with `std::memcpy`
  /// rather than read them through a typed pointer. Valid while the shard (or its `owner()`)
  /// lives; throws `UsageError` naming the file when the rows are out of range.
  [[nodiscard]] std::span<const std::byte> row_bytes(std::size_t first,
                                                     std::size_t count = 1) const& {
    check_rows(first, count);
    const std::size_t size = info_.row_bytes();
    return bytes_.subspan(first * size, count * size);
  }

  /// Rows `[first, first + count)` as values of type `T`, viewed in place, valid while the
  /// shard (or its `owner()`) lives. Throws `UsageError` naming the file when `T` is not the
  /// array's element type, the rows are out of range, or the shard is not `aligned()` (a
  /// typed view of unaligned values would be undefined behaviour): read those with
  /// `copy_values` or `array_row`, which copy, or `row_bytes`.
  template <class T>
  [[nodiscard]] std::span<const T> values(std::size_t first, std::size_t count = 1) const& {
    check_type<T>();
    check_rows(first, count);
    if (!aligned()) {
      throw UsageError("stoke: the data of '" + path_.string() + "' is not aligned for " +
                       dtype_name(info_.dtype) +
                       " (a stored .npz member lies where the archive put it): read its rows "
                       "with copy_values, array_row or row_bytes");
    }
    const std::size_t per_row = info_.row_elements();
    return {reinterpret_cast<const T*>(bytes_.data()) + first * per_row, count * per_row};
  }

  /// Copies rows `[first, first + count)` into `out` as values of type `T`, whatever the
  /// shard's alignment. Throws `UsageError` naming the file when `T` is not the array's
  /// element type, the rows are out of range, or `out` does not hold exactly their values.
  template <class T>
  void copy_values(std::size_t first, std::size_t count, std::span<T> out) const {
    check_type<T>();
    const std::span<const std::byte> from = row_bytes(first, count);
    if (out.size_bytes() != from.size()) {
      throw UsageError("stoke: copy_values of " + std::to_string(count) + " rows of '" +
                       path_.string() + "' into " + std::to_string(out.size()) +
                       " values; they hold " + std::to_string(from.size() / sizeof(T)));
    }
    if (!from.empty()) std::memcpy(out.data(), from.data(), from.size());
  }

  /// Rows `[first, first + count)` as one `ArrayRow<T>`: a view of the shard, kept alive by
  /// `keep` (the shard's `owner()`, or what holds the shard), when it is `aligned()`; else a
  /// copy of just these rows, which the row owns. Throws as `values` does for the type and
  /// the range.
  template <class T>
  [[nodiscard]] ArrayRow<T> array_row(std::size_t first, std::size_t count,
                                      std::shared_ptr<const void> keep) const {
    if (aligned()) return {values<T>(first, count), std::move(keep)};
    check_type<T>();
    check_rows(first, count);  // before allocating
    const std::size_t elements = count * info_.row_elements();
    std::shared_ptr<T[]> copy(new T[elements]);
    copy_values<T>(first, count, {copy.get(), elements});
    return {std::span<const T>(copy.get(), elements), std::move(copy)};
  }

 private:
  struct Owned {
    std::span<const std::byte> bytes;
    std::shared_ptr<const void> owner;
  };
  ArrayShard(std::filesystem::path path, ArrayInfo info, Owned owned)
      : ArrayShard(std::move(path), std::move(info), owned.bytes, std::move(owned.owner)) {}
  static Owned own(std::vector<std::byte> bytes) {
    auto held = std::make_shared<const std::vector<std::byte>>(std::move(bytes));
    return {std::span<const std::byte>(*held), held};
  }

  /// Throws `UsageError` when `T` is not the element type.
  template <class T>
  void check_type() const {
    if (dtype_of<T>() != info_.dtype) {
      throw UsageError("stoke: '" + path_.string() + "' holds " + dtype_name(info_.dtype) +
                       ", read as " + dtype_name(dtype_of<T>()));
    }
  }
  /// Throws `UsageError` when rows `[first, first + count)` are out of range.
  void check_rows(std::size_t first, std::size_t count) const {
    if (first > rows() || count > rows() - first) {
      throw UsageError("stoke: rows [" + std::to_string(first) + ", " +
                       std::to_string(first + count) + ") of '" + path_.string() + "', which has " +
                       std::to_string(rows()));
    }
  }

  std::filesystem::path path_;
  ArrayInfo info_;
  std::span<const std::byte> bytes_;
  std::shared_ptr<const void> owner_;
};

/// The rows of one `ArrayShard` as a dataset of `ArrayRow<T>`, each viewing the shard without
/// a copy when it is `aligned()`, else a copy of the row (see `ArrayShard::array_row`). Copies
/// share the shard.
template <class T>
class ArrayDataset {
 public:
  /// The rows of `shard`; throws `UsageError` when it does not hold `T`.
  explicit ArrayDataset(ArrayShard shard) : shard_(std::move(shard)) {
    shard_.copy_values<T>(0, 0, {});  // checks the type
  }

  /// Samples.
  [[nodiscard]] std::size_t size() const noexcept { return shard_.rows(); }
  /// Row `index`; throws `UsageError` naming the index and the size when out of range.
  [[nodiscard]] ArrayRow<T> get(std::size_t index) const {
    stoke::check_index(index, size(), "ArrayDataset");
    return shard_.array_row<T>(index, 1, shard_.owner());
  }
  /// Element type and shape.
  [[nodiscard]] const ArrayInfo& info() const noexcept { return shard_.info(); }
  /// The shard.
  [[nodiscard]] const ArrayShard& shard() const noexcept { return shard_; }

 private:
  ArrayShard shard_;
};

}  // namespace stoke

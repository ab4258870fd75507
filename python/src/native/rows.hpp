#pragma once
/// @file
/// The native side of `stoke_loader`'s data: named columns of rows (a NumPy array read in
/// place, or fixed-size records of a file), the dataset of row indices a loader orders, and
/// the batcher that gathers a batch's rows of every column into one buffer of stoke's pool.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <memory>
#include <numeric>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include <nanobind/ndarray.h>

#include <stoke/core/error.hpp>
#include <stoke/cpu/backend.hpp>
#include <stoke/cpu/buffer_pool.hpp>
#include <stoke/data/sources/mmap_records.hpp>

namespace stoke_python {

namespace nb = nanobind;

/// One named column of a table: `rows()` rows of `row_shape()` elements of `dtype()` each.
/// `copy_rows` may run on several threads at once, without the GIL.
class Column {
 public:
  Column(std::string name, nb::dlpack::dtype dtype, std::vector<std::size_t> row_shape)
      : name_(std::move(name)), dtype_(dtype), row_shape_(std::move(row_shape)) {
    if (dtype.bits == 0 || dtype.bits % 8 != 0 || dtype.lanes != 1) {
      throw stoke::InputError(
          "stoke_loader: column '" + name_ + "' has elements of " + std::to_string(dtype.bits) +
          " bits and " + std::to_string(dtype.lanes) + " lanes; stoke batches whole-byte numbers");
    }
    row_bytes_ =
        std::accumulate(row_shape_.begin(), row_shape_.end(), item_bytes(), std::multiplies<>{});
  }
  Column(const Column&) = delete;
  Column& operator=(const Column&) = delete;
  virtual ~Column() = default;

  /// Copies the rows `indices` (each `< rows()`), one after another, to `out`. They are rows
  /// `[first_row, first_row + indices.size())` of the batch being made (a column that draws
  /// per-sample randomness uses `stoke::sample_rng(first_row + k)` for `indices[k]`).
  virtual void copy_rows(std::span<const std::size_t> indices, std::size_t first_row,
                         std::byte* out) const = 0;

  /// Where each shard's rows begin, for a column read from shards (else null).
  [[nodiscard]] virtual const std::vector<std::size_t>* shard_begins() const { return nullptr; }
  /// The order the next epoch visits the shards in, for a column that reads shards ahead.
  virtual void read_ahead(std::span<const std::size_t> /*shards*/) const {}

  [[nodiscard]] const std::string& name() const noexcept { return name_; }
  [[nodiscard]] nb::dlpack::dtype dtype() const noexcept { return dtype_; }
  [[nodiscard]] const std::vector<std::size_t>& row_shape() const noexcept { return row_shape_; }
  [[nodiscard]] std::size_t rows() const noexcept { return rows_; }
  [[nodiscard]] std::size_t item_bytes() const noexcept { return dtype_.bits / 8; }
  [[nodiscard]] std::size_t row_bytes() const noexcept { return row_bytes_; }

 protected:
  void set_rows(std::size_t rows) noexcept { rows_ = rows; }

 private:
  std::string name_;
  nb::dlpack::dtype dtype_;
  std::vector<std::size_t> row_shape_;
  std::size_t rows_ = 0;
  std::size_t row_bytes_ = 0;
};

/// An array's rows along axis 0, read in place (zero copy): the column holds a reference to
/// the array, which stays alive while any loader over it does.
class ArrayColumn final : public Column {
 public:
  using Array = nb::ndarray<nb::ro, nb::device::cpu>;

  ArrayColumn(std::string name, Array array)
      : Column(std::move(name), array.dtype(), inner_shape(array)),
        array_(std::move(array)),
        base_(static_cast<const std::byte*>(array_.data())) {
    set_rows(array_.shape(0));
    const auto item = static_cast<std::int64_t>(item_bytes());
    row_stride_ = array_.stride(0) * item;
    std::int64_t expected = item;
    for (std::size_t d = array_.ndim(); d-- > 1;) {
      inner_strides_.insert(inner_strides_.begin(), array_.stride(d) * item);
      if (array_.shape(d) != 1 && array_.stride(d) * item != expected) contiguous_rows_ = false;
      expected *= static_cast<std::int64_t>(array_.shape(d));
    }
  }

  void copy_rows(std::span<const std::size_t> indices, std::size_t /*first_row*/,
                 std::byte* out) const override {
    const std::size_t bytes = row_bytes();
    if (!contiguous_rows_) {
      for (const std::size_t index : indices) out = copy_strided(row(index), 0, out);
      return;
    }
    switch (bytes) {  // constant sizes become single moves
      case 1:
        return copy_fixed<1>(indices, out);
      case 2:
        return copy_fixed<2>(indices, out);
      case 4:
        return copy_fixed<4>(indices, out);
      case 8:
        return copy_fixed<8>(indices, out);
      case 16:
        return copy_fixed<16>(indices, out);
      default:
        for (const std::size_t index : indices) {
          std::memcpy(out, row(index), bytes);
          out += bytes;
        }
    }
  }

 private:
  static std::vector<std::size_t> inner_shape(const Array& array) {
    if (array.ndim() == 0) {
      throw stoke::UsageError(
          "stoke_loader: an array source needs at least one dimension "
          "(rows along axis 0); this one is a scalar");
    }
    std::vector<std::size_t> shape;
    for (std::size_t d = 1; d < array.ndim(); ++d) shape.push_back(array.shape(d));
    return shape;
  }

  [[nodiscard]] const std::byte* row(std::size_t index) const noexcept {
    return base_ + static_cast<std::int64_t>(index) * row_stride_;
  }

  template <std::size_t Bytes>
  void copy_fixed(std::span<const std::size_t> indices, std::byte* out) const noexcept {
    for (const std::size_t index : indices) {
      std::memcpy(out, row(index), Bytes);
      out += Bytes;
    }
  }

  /// Copies the elements of dimension `dim` (of the row's dimensions) onwards, from `from`.
  std::byte* copy_strided(const std::byte* from, std::size_t dim, std::byte* out) const {
    const std::size_t item = item_bytes();
    if (dim == row_shape().size()) {
      std::memcpy(out, from, item);
      return out + item;
    }
    for (std::size_t k = 0; k < row_shape()[dim]; ++k) {
      out = copy_strided(from + static_cast<std::int64_t>(k) * inner_strides_[dim], dim + 1, out);
    }
    return out;
  }

  Array array_;
  const std::byte* base_;
  std::int64_t row_stride_ = 0;              ///< bytes from one row to the next (may be < 0)
  std::vector<std::int64_t> inner_strides_;  ///< bytes, per dimension of a row
  bool contiguous_rows_ = true;
};

/// Fixed-size records stored back to back in a file (stoke's `MmapRecordDataset`): mapped, or
/// read with `pread` so that a file that shrinks gives an error instead of a signal.
class RecordColumn final : public Column {
 public:
  RecordColumn(std::string name, const std::filesystem::path& path, nb::dlpack::dtype dtype,
               std::vector<std::size_t> row_shape, stoke::FileAccess access)
      : Column(std::move(name), dtype, std::move(row_shape)), records_(path, row_bytes(), access) {
    set_rows(records_.size());
  }

  void copy_rows(std::span<const std::size_t> indices, std::size_t /*first_row*/,
                 std::byte* out) const override {
    const std::size_t bytes = row_bytes();
    for (const std::size_t index : indices) {
      try {
        const stoke::RecordBytes record = records_.get(index);
        std::memcpy(out, record.data(), bytes);
      } catch (const stoke::Error& error) {
        throw stoke::InputError("stoke_loader: column '" + name() + "', record " +
                                std::to_string(index) + ": " + error.what());
      }
      out += bytes;
    }
  }

 private:
  stoke::MmapRecordDataset records_;
};

/// The columns a loader reads, all with the same number of rows.
class Table {
 public:
  /// Columns of `rows` rows each. The shards are those of the first column read from shards;
  /// a later one whose shards begin at other rows is noted (`shard_mismatch`).
  Table(std::vector<std::shared_ptr<const Column>> columns, std::size_t rows)
      : columns_(std::move(columns)), rows_(rows) {
    const Column* first = nullptr;
    for (const auto& column : columns_) {
      const std::vector<std::size_t>* begins = column->shard_begins();
      if (begins == nullptr) continue;
      if (first == nullptr) {
        first = column.get();
        shard_begins_ = *begins;
      } else if (*begins != shard_begins_ && shard_mismatch_.empty()) {
        shard_mismatch_ = "stoke_loader: the shards of column '" + column->name() +
                          "' begin at other rows than those of column '" + first->name() + "'";
      }
    }
    sharded_ = first != nullptr;
    if (!sharded_) shard_begins_ = {0};
  }

  /// Why the columns' shards cannot be shuffled together (empty when they can).
  [[nodiscard]] const std::string& shard_mismatch() const noexcept { return shard_mismatch_; }
  /// Where each shard begins (`{0}`: one shard, when no column is sharded).
  [[nodiscard]] const std::vector<std::size_t>& shard_begins() const noexcept {
    return shard_begins_;
  }
  /// Whether some column is read from shards.
  [[nodiscard]] bool sharded() const noexcept { return sharded_; }
  /// Tells every column the order the next epoch visits the shards in.
  void read_ahead(std::span<const std::size_t> shards) const {
    for (const auto& column : columns_) column->read_ahead(shards);
  }

  [[nodiscard]] const std::vector<std::shared_ptr<const Column>>& columns() const noexcept {
    return columns_;
  }
  [[nodiscard]] std::size_t rows() const noexcept { return rows_; }

  /// Byte offsets of every column in a batch of `rows` rows (each at a cache line), and the
  /// batch's total bytes last.
  [[nodiscard]] std::vector<std::size_t> layout(std::size_t rows) const {
    std::vector<std::size_t> offsets;
    offsets.reserve(columns_.size() + 1);
    std::size_t at = 0;
    for (const auto& column : columns_) {
      offsets.push_back(at);
      at += (column->row_bytes() * rows + alignment - 1) / alignment * alignment;
    }
    offsets.push_back(at);
    return offsets;
  }

  static constexpr std::size_t alignment = 64;

 private:
  std::vector<std::shared_ptr<const Column>> columns_;
  std::size_t rows_;
  std::vector<std::size_t> shard_begins_;
  std::string shard_mismatch_;
  bool sharded_ = false;
};

/// The dataset a loader orders: row `i` of the table is sample `i`. Reading happens in the
/// batcher, straight into the batch. A `ReadAheadShardedDataset`: the table's shards (used
/// when the loader shuffles shards) and its columns' read-ahead.
struct RowIndices {
  std::size_t count = 0;
  std::shared_ptr<const Table> table;
  [[nodiscard]] std::size_t size() const noexcept { return count; }
  [[nodiscard]] const std::vector<std::size_t>& shard_begins() const noexcept {
    return table->shard_begins();
  }
  void read_ahead(std::span<const std::size_t> shards) const { table->read_ahead(shards); }
  [[nodiscard]] std::size_t get(std::size_t index) const {
    if (index >= count) {
      throw stoke::UsageError("stoke_loader: row " + std::to_string(index) + " of " +
                              std::to_string(count));
    }
    return index;
  }
};

/// One batch's rows of every column, in one buffer of the batcher's pool; the buffer goes back
/// to the pool when the last owner of the batch lets it go.
struct Rows {
  std::shared_ptr<const Table> table;
  stoke::cpu::HostBuffer buffer;
  std::vector<std::size_t> offsets;  ///< of every column in `buffer`
  std::size_t rows = 0;
  stoke::cpu::Device device;

  /// Column `k`'s first byte.
  [[nodiscard]] std::byte* column_data(std::size_t k) const noexcept {
    return buffer.data() + offsets[k];
  }
};

/// A batch being gathered in chunks of rows, on several threads at once.
class PendingRows {
 public:
  PendingRows(std::vector<std::size_t> items, Rows out)
      : items_(std::move(items)), out_(std::move(out)) {}
  [[nodiscard]] std::size_t rows() const noexcept { return items_.size(); }
  void fill(std::size_t first, std::size_t last) {
    const std::span<const std::size_t> indices(items_.data() + first, last - first);
    const auto& columns = out_.table->columns();
    for (std::size_t k = 0; k < columns.size(); ++k) {
      columns[k]->copy_rows(indices, first, out_.column_data(k) + first * columns[k]->row_bytes());
    }
  }
  [[nodiscard]] Rows finish() && { return std::move(out_); }

 private:
  std::vector<std::size_t> items_;
  Rows out_;
};

/// Gathers a batch's rows of every column of `table` into one pooled buffer (a
/// `ChunkedBatcher`: the first batch of an epoch is filled by the workers and the consumer).
struct RowBatcher {
  std::shared_ptr<const Table> table;
  stoke::cpu::BufferPool pool{};

  [[nodiscard]] PendingRows begin_batch(std::vector<std::size_t> items,
                                        const stoke::cpu::Device& device) const {
    Rows out;
    out.table = table;
    out.offsets = table->layout(items.size());
    out.buffer = pool.acquire(out.offsets.back());
    out.offsets.pop_back();
    out.rows = items.size();
    out.device = device;
    return {std::move(items), std::move(out)};
  }

  [[nodiscard]] Rows batch(std::vector<std::size_t> items, const stoke::cpu::Device& device) const {
    PendingRows pending = begin_batch(std::move(items), device);
    pending.fill(0, pending.rows());
    return std::move(pending).finish();
  }
};

}  // namespace stoke_python

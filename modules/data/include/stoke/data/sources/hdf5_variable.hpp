#pragma once
/// @file
/// `Hdf5Variable`: one variable of an HDF5 or NetCDF-4 file, kept open (file and dataset) for
/// repeated reads of its rows by hyperslab, with a chunk cache sized for row-by-row reads.

#include <hdf5.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <stoke/core/error.hpp>
#include <stoke/data/sources/array_shard.hpp>
#include <stoke/data/sources/detail/hdf5_chunk_cache.hpp>
#include <stoke/data/sources/detail/hdf5_handle.hpp>
#include <stoke/data/sources/detail/hdf5_lookup.hpp>

namespace stoke {

/// One variable of an HDF5 or NetCDF-4 file, open for reading: its rows (along the first axis)
/// are read by hyperslab, converted to this machine's byte order. Reads are `const` and may run
/// on several threads at once (libhdf5 serialises them). Move-only; share it through a
/// `std::shared_ptr<const Hdf5Variable>` (as `Hdf5Dataset` does).
class Hdf5Variable {
 public:
  /// The default most bytes of decompressed chunks cached per open variable: 64 MiB.
  static constexpr std::size_t default_max_chunk_cache_bytes = std::size_t{64} << 20U;

  /// Opens `variable` (`"/name"`, `"/group/name"`; the leading `/` may be left out) of the file
  /// `path`, with a chunk cache of at most `max_chunk_cache_bytes` (see `chunk_cache()`; 0 turns
  /// it off). Throws `InputError` naming the file and the variable when the file is missing or
  /// no HDF5 file, the variable is missing (listing what its level holds) or is a group, its
  /// type is not a number stoke reads (naming the HDF5 type class), it is a scalar, or it needs
  /// a compression filter libhdf5 lacks.
  Hdf5Variable(std::filesystem::path path, std::string_view variable,
               std::size_t max_chunk_cache_bytes = default_max_chunk_cache_bytes)
      : path_(std::move(path)), name_(variable) {
    const detail::Hdf5Call call;
    file_ = detail::hdf5_open_file(path_, name_);
    std::vector<hsize_t> chunk;
    {
      const detail::Hdf5Handle found = detail::hdf5_open_dataset(file_.get(), path_, name_);
      const detail::Hdf5Handle type = detail::hdf5_checked(
          H5Dget_type(found.get()), H5Tclose, path_, name_, "cannot read its element type");
      info_.dtype = detail::hdf5_dtype(type.get(), path_, name_);
      info_.shape = detail::hdf5_shape(found.get(), info_.dtype, path_, name_);
      chunk = detail::hdf5_chunk_shape(found.get(), path_, name_);
    }
    chunk_shape_.assign(chunk.begin(), chunk.end());
    cache_ = detail::hdf5_chunk_cache(info_.shape, chunk_shape_, dtype_size(info_.dtype),
                                      max_chunk_cache_bytes);
    rows_per_read_ = detail::hdf5_rows_per_read(info_.shape, chunk_shape_);
    // The chunk cache is a property of opening: open the dataset again, with it.
    const detail::Hdf5Handle access = detail::hdf5_checked(
        H5Pcreate(H5P_DATASET_ACCESS), H5Pclose, path_, name_, "cannot create access properties");
    // w0 = 1: the chunks are only read, so a fully read chunk is the first to evict.
    if (!chunk_shape_.empty() &&
        H5Pset_chunk_cache(access.get(), cache_.slots, cache_.bytes, 1.0) < 0) {
      detail::hdf5_fail(path_, name_, "cannot set its chunk cache");
    }
    std::string canonical;
    for (const std::string& part : detail::hdf5_split(name_)) canonical += "/" + part;
    dataset_ = detail::hdf5_checked(H5Dopen2(file_.get(), canonical.c_str(), access.get()),
                                    H5Dclose, path_, name_, "cannot open the dataset");
    memory_type_ = detail::hdf5_memory_type(info_.dtype);
  }

  /// The file.
  [[nodiscard]] const std::filesystem::path& path() const noexcept { return path_; }
  /// The variable's name, as given.
  [[nodiscard]] const std::string& name() const noexcept { return name_; }
  /// Element type and shape.
  [[nodiscard]] const ArrayInfo& info() const noexcept { return info_; }
  /// The chunk shape (one extent per dimension); empty when the variable is not chunked.
  [[nodiscard]] const std::vector<std::size_t>& chunk_shape() const noexcept {
    return chunk_shape_;
  }
  /// The chunk cache it was opened with: room for one slab of chunk rows (every chunk that the
  /// rows of one chunk row touch), at least 1 MiB and at most the constructor's limit, and a
  /// prime number of slots 100 times the chunks that fit. Zeros when not chunked.
  [[nodiscard]] const Hdf5ChunkCache& chunk_cache() const noexcept { return cache_; }

  /// Reads rows `[first, first + count)` into `out`, which must hold exactly their
  /// `count * info().row_bytes()` bytes, aligned for the element type (else `UsageError`).
  /// Throws `InputError` naming the file and the variable when the rows are out of range or
  /// libhdf5 fails (with its message).
  void read_rows(std::size_t first, std::size_t count, std::span<std::byte> out) const {
    check_buffer(count, out);
    if (first > info_.rows() || count > info_.rows() - first) {
      throw InputError(detail::hdf5_context(path_, name_) + "rows [" + std::to_string(first) +
                       ", " + std::to_string(first + count) + ") are out of range: it has " +
                       std::to_string(info_.rows()) + " rows (" + describe(info_) + ")");
    }
    if (out.empty()) return;
    const Run run{first, count};
    read_runs(std::span<const Run>(&run, 1), count, out);
  }

  /// Reads the rows `rows` (ascending, no repeats) into `out`, row `rows[k]` at
  /// `out[k * info().row_bytes()]`: one hyperslab read per run of consecutive rows, in ascending
  /// order, so that the rows of one chunk are read one after another and the chunk is read (and
  /// decompressed) once while the chunk cache holds it. Throws as the range overload does, and
  /// `UsageError` when `rows` is not ascending.
  void read_rows(std::span<const std::size_t> rows, std::span<std::byte> out) const {
    check_buffer(rows.size(), out);
    for (std::size_t k = 0; k < rows.size(); ++k) {
      if (k > 0 && rows[k] <= rows[k - 1]) {
        throw UsageError(detail::hdf5_context(path_, name_) + "rows to read are not ascending: " +
                         std::to_string(rows[k - 1]) + " then " + std::to_string(rows[k]));
      }
      if (rows[k] >= info_.rows()) {
        throw InputError(detail::hdf5_context(path_, name_) + "row " + std::to_string(rows[k]) +
                         " is out of range: it has " + std::to_string(info_.rows()) + " rows");
      }
    }
    if (out.empty()) return;
    std::vector<Run> runs;
    for (const std::size_t row : rows) {
      if (!runs.empty() && runs.back().first + runs.back().count == row) {
        ++runs.back().count;
      } else {
        runs.push_back({row, 1});
      }
    }
    read_runs(runs, rows.size(), out);
  }

  /// Rows `[first, first + count)` as a shard of their own (see `read_rows`).
  [[nodiscard]] ArrayShard rows(std::size_t first, std::size_t count) const {
    ArrayInfo info = info_;
    info.shape.front() = count;
    std::vector<std::byte> bytes(count * info_.row_bytes());
    read_rows(first, count, bytes);
    return {path_, std::move(info), std::move(bytes)};
  }

  /// The whole variable as a shard.
  [[nodiscard]] ArrayShard load() const { return rows(0, info_.rows()); }

 private:
  /// Rows `[first, first + count)`.
  struct Run {
    std::size_t first = 0;
    std::size_t count = 0;
  };

  void check_buffer(std::size_t rows, std::span<std::byte> out) const {
    if (out.size() != rows * info_.row_bytes()) {
      throw UsageError(detail::hdf5_context(path_, name_) + "a buffer of " +
                       std::to_string(out.size()) + " bytes for " + std::to_string(rows) +
                       " rows of " + std::to_string(info_.row_bytes()) + " bytes");
    }
    if (reinterpret_cast<std::uintptr_t>(out.data()) % dtype_size(info_.dtype) != 0) {
      throw UsageError(detail::hdf5_context(path_, name_) + "the buffer is not aligned for " +
                       dtype_name(info_.dtype));
    }
  }

  /// Selects rows `[first, first + count)` (all of each) of the dataspace `space`.
  void select_rows(hid_t space, std::size_t first, std::size_t count) const {
    std::vector<hsize_t> start(info_.shape.size(), 0);
    std::vector<hsize_t> extent(info_.shape.begin(), info_.shape.end());
    start.front() = first;
    extent.front() = count;
    if (H5Sselect_hyperslab(space, H5S_SELECT_SET, start.data(), nullptr, extent.data(), nullptr) <
        0) {
      detail::hdf5_fail(path_, name_, "cannot select rows");
    }
  }

  /// Reads the `runs`, `rows` rows in all, one after another into `out`.
  void read_runs(std::span<const Run> runs, std::size_t rows, std::span<std::byte> out) const {
    const detail::Hdf5Call call;
    const detail::Hdf5Handle file_space = detail::hdf5_checked(
        H5Dget_space(dataset_.get()), H5Sclose, path_, name_, "cannot read its dataspace");
    std::vector<hsize_t> memory(info_.shape.begin(), info_.shape.end());
    memory.front() = rows;
    const detail::Hdf5Handle memory_space = detail::hdf5_checked(
        H5Screate_simple(static_cast<int>(memory.size()), memory.data(), nullptr), H5Sclose, path_,
        name_, "cannot make a memory dataspace");
    std::size_t at = 0;
    for (const Run& run : runs) {
      // In pieces of a bounded number of chunks: libhdf5 maps every chunk of a selection first.
      for (std::size_t done = 0; done < run.count;) {
        const std::size_t piece = std::min(run.count - done, rows_per_read_);
        select_rows(file_space.get(), run.first + done, piece);
        select_rows(memory_space.get(), at, piece);
        if (H5Dread(dataset_.get(), memory_type_, memory_space.get(), file_space.get(), H5P_DEFAULT,
                    out.data()) < 0) {
          detail::hdf5_fail(path_, name_,
                            "cannot read rows [" + std::to_string(run.first + done) + ", " +
                                std::to_string(run.first + done + piece) + ")");
        }
        done += piece;
        at += piece;
      }
    }
  }

  std::filesystem::path path_;
  std::string name_;
  ArrayInfo info_;
  std::vector<std::size_t> chunk_shape_;
  Hdf5ChunkCache cache_;
  std::size_t rows_per_read_ = 0;  // rows of one H5Dread (see detail::hdf5_rows_per_read)
  detail::Hdf5Handle file_;        // declared before dataset_: closed after it
  detail::Hdf5Handle dataset_;     // opened with the chunk cache
  hid_t memory_type_ = H5I_INVALID_HID;
};

}  // namespace stoke

#pragma once
/// @file
/// `Hdf5Dataset<T>`: the rows (first axis) of one HDF5 or NetCDF-4 variable as a dataset of
/// `ArrayRow<T>`, each read by hyperslab when asked for.

#include <algorithm>
#include <cstddef>
#include <filesystem>
#include <memory>
#include <span>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include <stoke/core/error.hpp>
#include <stoke/data/check_index.hpp>
#include <stoke/data/sources/array_shard.hpp>
#include <stoke/data/sources/detail/hdf5_handle.hpp>
#include <stoke/data/sources/hdf5_variable.hpp>

namespace stoke {

/// The rows of one HDF5 or NetCDF-4 variable along its first axis (time steps, images), as a
/// dataset of `ArrayRow<T>`: `get(i)` reads row `i` from the file by hyperslab, `get_many` the
/// rows of a batch with one hyperslab. `T` must be the variable's element type. The variable
/// stays open, shared by copies; `get` may run on several threads at once.
template <class T>
class Hdf5Dataset {
  static_assert(!std::is_same_v<T, bool>, "stoke: no HDF5 type is read as bool");

 public:
  /// The rows of `variable` of the file `path` (see `Hdf5Variable`). Throws `InputError` as
  /// `Hdf5Variable` does, and naming both types when the variable does not hold `T`.
  Hdf5Dataset(const std::filesystem::path& path, std::string_view variable,
              std::size_t max_chunk_cache_bytes = Hdf5Variable::default_max_chunk_cache_bytes)
      : Hdf5Dataset(std::make_shared<const Hdf5Variable>(path, variable, max_chunk_cache_bytes)) {}

  /// The rows of the open variable `variable` (shared). Throws `InputError` naming the file,
  /// the variable and both types when it does not hold `T`, and `UsageError` when it is null.
  explicit Hdf5Dataset(std::shared_ptr<const Hdf5Variable> variable)
      : variable_(std::move(variable)) {
    if (!variable_) throw UsageError("stoke: Hdf5Dataset of a null Hdf5Variable");
    const ArrayInfo& info = variable_->info();
    if (info.dtype != dtype_of<T>()) {
      throw InputError(detail::hdf5_context(variable_->path(), variable_->name()) + "holds " +
                       describe(info) + ", read as " + dtype_name(dtype_of<T>()));
    }
  }

  /// Samples: the first dimension.
  [[nodiscard]] std::size_t size() const noexcept { return variable_->info().rows(); }

  /// Row `index`, read from the file. Throws `UsageError` naming the index and the size when
  /// out of range, and `InputError` when reading fails.
  [[nodiscard]] ArrayRow<T> get(std::size_t index) const {
    stoke::check_index(index, size(), "Hdf5Dataset");
    const std::size_t elements = variable_->info().row_elements();
    std::shared_ptr<T[]> values = std::make_shared<T[]>(elements);
    variable_->read_rows(index, 1, std::as_writable_bytes(std::span<T>(values.get(), elements)));
    return {std::span<const T>(values.get(), elements), std::move(values)};
  }

  /// Appends rows `indices` to `out`, in order, read with one hyperslab selection (the rows
  /// sorted, repeats read once) into one buffer that every appended row views. Checks every
  /// index first: on `UsageError` nothing is appended.
  void get_many(std::span<const std::size_t> indices, std::vector<ArrayRow<T>>& out) const {
    for (const std::size_t index : indices) stoke::check_index(index, size(), "Hdf5Dataset");
    std::vector<std::size_t> rows(indices.begin(), indices.end());
    std::sort(rows.begin(), rows.end());
    rows.erase(std::unique(rows.begin(), rows.end()), rows.end());
    const std::size_t elements = variable_->info().row_elements();
    std::shared_ptr<T[]> values = std::make_shared<T[]>(rows.size() * elements);
    variable_->read_rows(
        rows, std::as_writable_bytes(std::span<T>(values.get(), rows.size() * elements)));
    out.reserve(out.size() + indices.size());
    for (const std::size_t index : indices) {
      const auto at = static_cast<std::size_t>(std::lower_bound(rows.begin(), rows.end(), index) -
                                               rows.begin());
      out.push_back({std::span<const T>(values.get() + at * elements, elements), values});
    }
  }

  /// Element type and shape of the whole variable.
  [[nodiscard]] const ArrayInfo& info() const noexcept { return variable_->info(); }
  /// The open variable.
  [[nodiscard]] const std::shared_ptr<const Hdf5Variable>& variable() const noexcept {
    return variable_;
  }

 private:
  std::shared_ptr<const Hdf5Variable> variable_;
};

}  // namespace stoke

#pragma once
/// @file
/// `Hdf5Column`: the rows of one HDF5 or NetCDF-4 variable as a column, read by hyperslab
/// (stoke's `Hdf5Variable`). Built only where the package found libhdf5
/// (`STOKE_PYTHON_HDF5`).

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <filesystem>
#include <memory>
#include <numeric>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include <stoke/core/error.hpp>
#include <stoke/data/sources/hdf5_variable.hpp>

#include "array_files.hpp"
#include "rows.hpp"

namespace stoke_python {

/// The variable `variable` of the HDF5 or NetCDF-4 file `path`, one row per index of its first
/// axis. A batch's rows are read in ascending order (one hyperslab per run of consecutive
/// rows, each chunk decompressed once), then put in the batch's order. Values are read as
/// stored (NetCDF's `scale_factor`, `add_offset` and `_FillValue` are not applied).
class Hdf5Column final : public Column {
 public:
  /// Opens the variable; throws `InputError` naming the file and the variable when it cannot.
  Hdf5Column(std::string name, const std::filesystem::path& path, const std::string& variable)
      : Hdf5Column(std::move(name), std::make_shared<const stoke::Hdf5Variable>(path, variable)) {}

  void copy_rows(std::span<const std::size_t> indices, std::size_t /*first_row*/,
                 std::byte* out) const override {
    const std::size_t bytes = row_bytes();
    // The distinct rows, ascending; `slot[k]` is where indices[k] lands among them.
    std::vector<std::size_t> order(indices.size());
    std::iota(order.begin(), order.end(), std::size_t{0});
    std::sort(order.begin(), order.end(),
              [&](std::size_t a, std::size_t b) { return indices[a] < indices[b]; });
    std::vector<std::size_t> rows;
    std::vector<std::size_t> slot(indices.size());
    for (const std::size_t k : order) {
      if (rows.empty() || rows.back() != indices[k]) rows.push_back(indices[k]);
      slot[k] = rows.size() - 1;
    }
    thread_local std::vector<std::byte> read;
    read.resize(rows.size() * bytes);
    try {
      variable_->read_rows(rows, read);
    } catch (const stoke::Error& error) {
      throw stoke::InputError("stoke_loader: column '" + name() + "', rows " +
                              std::to_string(rows.front()) + " to " + std::to_string(rows.back()) +
                              ": " + error.what());
    }
    for (std::size_t k = 0; k < indices.size(); ++k) {
      std::memcpy(out + k * bytes, read.data() + slot[k] * bytes, bytes);
    }
  }

 private:
  Hdf5Column(std::string name, std::shared_ptr<const stoke::Hdf5Variable> variable)
      : Column(std::move(name), dlpack_dtype(variable->info().dtype), variable->info().row_shape()),
        variable_(std::move(variable)) {
    set_rows(variable_->info().rows());
  }

  std::shared_ptr<const stoke::Hdf5Variable> variable_;
};

}  // namespace stoke_python

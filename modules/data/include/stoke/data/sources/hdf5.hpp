#pragma once
/// @file
/// HDF5 and NetCDF-4 variables (a NetCDF-4 file is an HDF5 file, its variable `name` the dataset
/// `/name`, or `/group/name`): `read_hdf5_info`, `load_hdf5` (a whole variable), `read_hdf5_rows`
/// (rows along the first axis, by hyperslab), `hdf5_format` (for `ShardedArrays`),
/// `Hdf5Variable` (a variable kept open for repeated reads) and `Hdf5Dataset` (its rows as a
/// dataset). Needs libhdf5 (target `stoke::hdf5`); not part of `<stoke/stoke.hpp>` or the
/// module.
///
/// Values are read as stored: NetCDF attributes such as `scale_factor`, `add_offset` and
/// `_FillValue` are not applied.
///
/// Every libhdf5 call is made inside a `detail::Hdf5Call`, which holds one process-wide lock
/// where libhdf5 is not thread-safe (a thread-safe libhdf5 takes its own global lock) and keeps
/// libhdf5 from printing to stderr: its message ends up in the `InputError` instead.

#include <cstddef>
#include <filesystem>
#include <string>
#include <string_view>

#include <stoke/core/error.hpp>
#include <stoke/data/sources/array_shard.hpp>
#include <stoke/data/sources/hdf5_dataset.hpp>
#include <stoke/data/sources/hdf5_variable.hpp>
#include <stoke/data/sources/sharded_arrays.hpp>

namespace stoke {

/// Element type and shape of the variable `variable` (`"/name"` or `"/group/name"`) of the
/// HDF5 or NetCDF-4 file `path`. Throws `InputError` naming the file and the variable when the
/// file is missing or no HDF5 file, the variable is missing (listing what its level holds), its
/// type is not a number stoke reads (strings, compound, variable-length, enums, opaque, ...), or
/// it is a scalar.
inline ArrayInfo read_hdf5_info(const std::filesystem::path& path, std::string_view variable) {
  return Hdf5Variable(path, variable).info();
}

/// The whole variable `variable` of the HDF5 or NetCDF-4 file `path`, read into memory in the
/// byte order of this machine. Throws `InputError` as `read_hdf5_info` does, and when reading
/// fails (a corrupt or truncated file, a missing compression filter), with libhdf5's message.
inline ArrayShard load_hdf5(const std::filesystem::path& path, std::string_view variable) {
  return Hdf5Variable(path, variable).load();
}

/// Rows `[first, first + count)` along the first axis of the variable `variable` of the HDF5 or
/// NetCDF-4 file `path`, read by one hyperslab selection (the rest of the file is not read).
/// Throws `InputError` as `load_hdf5` does, and when the rows are out of range.
inline ArrayShard read_hdf5_rows(const std::filesystem::path& path, std::string_view variable,
                                 std::size_t first, std::size_t count) {
  return Hdf5Variable(path, variable).rows(first, count);
}

/// How `ShardedArrays` reads the variable `variable` of HDF5 or NetCDF-4 files: its header at
/// open, the whole variable when a shard is needed, a hyperslab of rows for the head of a
/// window.
inline ArrayFileFormat hdf5_format(std::string variable) {
  return {
      .info =
          [variable](const std::filesystem::path& path) { return read_hdf5_info(path, variable); },
      .load = [variable](const std::filesystem::path& path) { return load_hdf5(path, variable); },
      .read_rows = [variable](
                       const std::filesystem::path& path, std::size_t first,
                       std::size_t count) { return read_hdf5_rows(path, variable, first, count); }};
}

}  // namespace stoke

#pragma once
/// @file
/// Writes one month of examples/climate_shards as an HDF5 file (built with stoke::hdf5 only):
/// the variable "/fields", float32 [hours, variables, lat, lon], in chunks of one day.

#include <hdf5.h>

#include <algorithm>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

#include <stoke/stoke.hpp>

namespace climate {

/// The variable the HDF5 files hold.
inline constexpr const char* hdf5_variable = "/fields";

/// Writes `values` (the array `info`) to `path` as the variable `hdf5_variable`.
inline void write_hdf5(const std::filesystem::path& path, const stoke::ArrayInfo& info,
                       const std::vector<float>& values) {
  std::vector<hsize_t> dims(info.shape.begin(), info.shape.end());
  std::vector<hsize_t> chunk = dims;
  chunk.front() = std::min<hsize_t>(24, dims.front());
  const hid_t file = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  const hid_t space = H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr);
  const hid_t properties = H5Pcreate(H5P_DATASET_CREATE);
  H5Pset_chunk(properties, static_cast<int>(chunk.size()), chunk.data());
  const hid_t dataset =
      H5Dcreate2(file, hdf5_variable, H5T_IEEE_F32LE, space, H5P_DEFAULT, properties, H5P_DEFAULT);
  const herr_t written = dataset < 0 ? -1
                                     : H5Dwrite(dataset, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL,
                                                H5P_DEFAULT, values.data());
  if (dataset >= 0) H5Dclose(dataset);
  H5Pclose(properties);
  H5Sclose(space);
  if (file >= 0) H5Fclose(file);
  if (file < 0 || written < 0) throw std::runtime_error("cannot write " + path.string());
}

}  // namespace climate

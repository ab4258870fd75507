#pragma once
/// @file
/// Finding a variable in an HDF5 (or NetCDF-4) file and saying what it holds: the file opened
/// read-only, the dataset found by its path (the variables of a level listed when it is not
/// there), its element type mapped to a `DType`, its shape, and the filters it needs.
/// Call every function here inside an `Hdf5Call`.

#include <hdf5.h>

#include <algorithm>
#include <array>
#include <cstddef>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include <stoke/core/error.hpp>
#include <stoke/data/sources/array_shard.hpp>
#include <stoke/data/sources/detail/hdf5_handle.hpp>

namespace stoke::detail {

/// The name of an HDF5 type class in errors (`"string"`, `"compound"`, `"enum"`, ...).
inline std::string hdf5_class_name(H5T_class_t type_class) {
  switch (type_class) {
    case H5T_INTEGER:
      return "integer";
    case H5T_FLOAT:
      return "float";
    case H5T_TIME:
      return "time";
    case H5T_STRING:
      return "string";
    case H5T_BITFIELD:
      return "bitfield";
    case H5T_OPAQUE:
      return "opaque";
    case H5T_COMPOUND:
      return "compound";
    case H5T_REFERENCE:
      return "reference";
    case H5T_ENUM:
      return "enum";
    case H5T_VLEN:
      return "variable-length";
    case H5T_ARRAY:
      return "array";
    default:
      return "unknown (class " + std::to_string(static_cast<int>(type_class)) + ")";
  }
}

/// The `DType` of the dataset type `type`: integers of 1, 2, 4 or 8 bytes of either sign,
/// floats of 4 or 8 bytes. Throws `InputError` naming the type class (and size) otherwise.
inline DType hdf5_dtype(hid_t type, const std::filesystem::path& path, std::string_view variable) {
  const H5T_class_t type_class = H5Tget_class(type);
  if (type_class == H5T_NO_CLASS) hdf5_fail(path, variable, "cannot read its element type");
  const std::size_t size = H5Tget_size(type);
  std::string refused = hdf5_class_name(type_class) + " (HDF5 type class)";
  if (type_class == H5T_INTEGER) {
    const H5T_sign_t sign = H5Tget_sign(type);
    if (sign == H5T_SGN_ERROR) hdf5_fail(path, variable, "cannot read the sign of its integers");
    const bool is_signed = sign == H5T_SGN_2;
    if (size == 1) return is_signed ? DType::i8 : DType::u8;
    if (size == 2) return is_signed ? DType::i16 : DType::u16;
    if (size == 4) return is_signed ? DType::i32 : DType::u32;
    if (size == 8) return is_signed ? DType::i64 : DType::u64;
    refused = std::to_string(size) + "-byte integer";
  } else if (type_class == H5T_FLOAT) {
    if (size == 4) return DType::f32;
    if (size == 8) return DType::f64;
    refused = std::to_string(size) + "-byte float";
  }
  hdf5_fail(path, variable,
            "holds " + refused +
                " elements; stoke reads integers of 1, 2, 4 or 8 bytes and floats of 4 or 8");
}

/// The native memory type of `dtype` (a libhdf5 constant: not to be closed). libhdf5 converts
/// the file's byte order to it when reading. `boolean` has none (no HDF5 type maps to it).
inline hid_t hdf5_memory_type(DType dtype) {
  switch (dtype) {
    case DType::u8:
      return H5T_NATIVE_UINT8;
    case DType::i8:
      return H5T_NATIVE_INT8;
    case DType::u16:
      return H5T_NATIVE_UINT16;
    case DType::i16:
      return H5T_NATIVE_INT16;
    case DType::u32:
      return H5T_NATIVE_UINT32;
    case DType::i32:
      return H5T_NATIVE_INT32;
    case DType::u64:
      return H5T_NATIVE_UINT64;
    case DType::i64:
      return H5T_NATIVE_INT64;
    case DType::f32:
      return H5T_NATIVE_FLOAT;
    case DType::f64:
      return H5T_NATIVE_DOUBLE;
    case DType::boolean:
      break;
  }
  throw UsageError("stoke: no HDF5 memory type for " + dtype_name(dtype));
}

/// What the first bytes of a file that libhdf5 refused say it is, for the error: a NetCDF-3
/// file (`CDF\1`, `CDF\2`, `CDF\5`) is no HDF5 file.
inline std::string hdf5_not_hdf5_hint(const std::filesystem::path& path) {
  std::array<char, 4> magic{};
  std::ifstream file(path, std::ios::binary);
  if (!file.read(magic.data(), magic.size())) return "";
  if (magic[0] == 'C' && magic[1] == 'D' && magic[2] == 'F' &&
      (magic[3] == 1 || magic[3] == 2 || magic[3] == 5)) {
    return " (it is a NetCDF-3 file: only NetCDF-4 files are HDF5 files; convert it with "
           "`nccopy -k nc4 in.nc out.nc`)";
  }
  return "";
}

/// Opens the file at `path` read-only; `variable` is named in errors. Throws `InputError` when
/// it is missing, not a regular file, not an HDF5 file or cannot be opened.
inline Hdf5Handle hdf5_open_file(const std::filesystem::path& path, std::string_view variable) {
  std::error_code error;
  const auto status = std::filesystem::status(path, error);
  if (status.type() == std::filesystem::file_type::not_found) {
    throw InputError(hdf5_context(path, variable) + "no such file");
  }
  if (error) {
    throw InputError(hdf5_context(path, variable) + "cannot be accessed (" + error.message() + ")");
  }
  if (!std::filesystem::is_regular_file(status)) {
    throw InputError(hdf5_context(path, variable) + "not a regular file");
  }
  const hid_t file = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  if (file < 0) {
    const Hdf5Failure failure = hdf5_failure();
    const std::string cause = failure.text.empty() ? "" : " (libhdf5: " + failure.text + ")";
    if (failure.not_hdf5) {
      throw InputError(hdf5_context(path, variable) + "not an HDF5 file" +
                       hdf5_not_hdf5_hint(path) + cause);
    }
    throw InputError(hdf5_context(path, variable) + "cannot be opened" + cause);
  }
  return {file, H5Fclose};
}

/// At most `limit` names of the links in the group `group`, a group's with a trailing `/`,
/// comma-separated (`"(empty)"` for none), for errors that say what there is.
inline std::string hdf5_list_group(hid_t group, std::size_t limit = 20) {
  H5G_info_t info{};
  if (H5Gget_info(group, &info) < 0) {
    H5Eclear2(H5E_DEFAULT);
    return "(cannot be listed)";
  }
  if (info.nlinks == 0) return "(empty)";
  std::string names;
  const hsize_t shown = std::min<hsize_t>(info.nlinks, limit);
  for (hsize_t i = 0; i < shown; ++i) {
    const ssize_t length =
        H5Lget_name_by_idx(group, ".", H5_INDEX_NAME, H5_ITER_INC, i, nullptr, 0, H5P_DEFAULT);
    if (length < 0) break;
    std::string name(static_cast<std::size_t>(length) + 1, '\0');
    H5Lget_name_by_idx(group, ".", H5_INDEX_NAME, H5_ITER_INC, i, name.data(), name.size(),
                       H5P_DEFAULT);
    name.resize(static_cast<std::size_t>(length));
    // Only hard links are followed: a soft or external link is listed by its name.
    H5L_info_t link{};
    if (H5Lget_info(group, name.c_str(), &link, H5P_DEFAULT) >= 0 && link.type == H5L_TYPE_HARD) {
      const Hdf5Handle object(H5Oopen(group, name.c_str(), H5P_DEFAULT), H5Oclose);
      if (object && H5Iget_type(object.get()) == H5I_GROUP) name += "/";
    }
    names += (i == 0 ? "" : ", ") + name;
  }
  H5Eclear2(H5E_DEFAULT);
  if (info.nlinks > shown) names += ", and " + std::to_string(info.nlinks - shown) + " more";
  return names;
}

/// The components of `variable` (`"/group/name"` or `"group/name"`), empty ones skipped.
inline std::vector<std::string> hdf5_split(std::string_view variable) {
  std::vector<std::string> parts;
  std::size_t start = 0;
  while (start <= variable.size()) {
    const std::size_t end = std::min(variable.find('/', start), variable.size());
    if (end > start) parts.emplace_back(variable.substr(start, end - start));
    start = end + 1;
  }
  return parts;
}

/// Opens the dataset `variable` (`"/name"`, `"/group/name"`) of the open file `file` at `path`.
/// Throws `InputError` when a level is missing (listing what that level holds), is not a group,
/// or the variable is a group or a named type.
inline Hdf5Handle hdf5_open_dataset(hid_t file, const std::filesystem::path& path,
                                    std::string_view variable) {
  const std::vector<std::string> parts = hdf5_split(variable);
  if (parts.empty()) hdf5_fail(path, variable, "names no variable (expected \"/name\")");
  Hdf5Handle level = hdf5_checked(H5Gopen2(file, "/", H5P_DEFAULT), H5Gclose, path, variable,
                                  "cannot open the root group");
  std::string level_name = "/";
  for (std::size_t i = 0; i < parts.size(); ++i) {
    const std::string& part = parts[i];
    const htri_t exists = H5Lexists(level.get(), part.c_str(), H5P_DEFAULT);
    if (exists < 0) hdf5_fail(path, variable, "cannot look up '" + part + "' in " + level_name);
    if (exists == 0) {
      hdf5_fail(path, variable,
                "no '" + part + "' in group '" + level_name +
                    "', which holds: " + hdf5_list_group(level.get()));
    }
    const std::string name = (level_name == "/" ? "/" : level_name + "/") + part;
    Hdf5Handle object = hdf5_checked(H5Oopen(level.get(), part.c_str(), H5P_DEFAULT), H5Oclose,
                                     path, variable, ("cannot open '" + name + "'").c_str());
    const H5I_type_t type = H5Iget_type(object.get());
    const bool last = i + 1 == parts.size();
    if (last && type == H5I_DATASET) return object;
    if (last && type == H5I_GROUP) {
      hdf5_fail(
          path, variable,
          "'" + name + "' is a group, not a variable; it holds: " + hdf5_list_group(object.get()));
    }
    if (last) hdf5_fail(path, variable, "'" + name + "' is a named datatype, not a variable");
    if (type != H5I_GROUP) hdf5_fail(path, variable, "'" + name + "' is not a group");
    level = std::move(object);
    level_name = name;
  }
  hdf5_fail(path, variable, "not found");  // unreachable: the loop returns or throws
}

/// The dimensions of the dataset `dataset`. Throws `InputError` for a scalar (rank 0) or a
/// null dataspace, and when its bytes (of `dtype`) would not fit in the address space.
inline std::vector<std::size_t> hdf5_shape(hid_t dataset, DType dtype,
                                           const std::filesystem::path& path,
                                           std::string_view variable) {
  const Hdf5Handle space =
      hdf5_checked(H5Dget_space(dataset), H5Sclose, path, variable, "cannot read its dataspace");
  const H5S_class_t space_class = H5Sget_simple_extent_type(space.get());
  if (space_class == H5S_NULL) hdf5_fail(path, variable, "has a null dataspace (no elements)");
  const int rank = H5Sget_simple_extent_ndims(space.get());
  if (rank < 0) hdf5_fail(path, variable, "cannot read its rank");
  if (space_class == H5S_SCALAR || rank == 0) {
    hdf5_fail(path, variable, "is a scalar (rank 0); stoke reads arrays of rank 1 or more");
  }
  std::vector<hsize_t> dims(static_cast<std::size_t>(rank));
  if (H5Sget_simple_extent_dims(space.get(), dims.data(), nullptr) < 0) {
    hdf5_fail(path, variable, "cannot read its dimensions");
  }
  std::vector<std::size_t> shape(dims.begin(), dims.end());
  bool empty = false;
  for (const hsize_t extent : dims) empty = empty || extent == 0;
  std::size_t bytes = dtype_size(dtype);
  for (const hsize_t extent : dims) {
    if (empty) break;
    if (extent > std::numeric_limits<std::size_t>::max() / bytes) {
      hdf5_fail(path, variable,
                "its shape " + describe(ArrayInfo{dtype, shape}) +
                    " declares more bytes than the address space holds");
    }
    bytes *= static_cast<std::size_t>(extent);
  }
  return shape;
}

/// The chunk shape of `dataset` (empty when its layout is not chunked), after checking that
/// libhdf5 has every filter (compression) it needs; throws `InputError` naming a missing one.
inline std::vector<hsize_t> hdf5_chunk_shape(hid_t dataset, const std::filesystem::path& path,
                                             std::string_view variable) {
  const Hdf5Handle create = hdf5_checked(H5Dget_create_plist(dataset), H5Pclose, path, variable,
                                         "cannot read its creation properties");
  const int filters = H5Pget_nfilters(create.get());
  for (int f = 0; f < filters; ++f) {
    unsigned flags = 0;
    std::size_t values = 0;
    std::array<char, 256> name{};
    unsigned config = 0;
    const H5Z_filter_t filter = H5Pget_filter2(create.get(), static_cast<unsigned>(f), &flags,
                                               &values, nullptr, name.size(), name.data(), &config);
    if (filter < 0) hdf5_fail(path, variable, "cannot read its filters");
    const htri_t available = H5Zfilter_avail(filter);
    if (available <= 0) {
      H5Eclear2(H5E_DEFAULT);
      hdf5_fail(path, variable,
                "needs HDF5 filter " + std::to_string(filter) + " ('" + name.data() +
                    "'), which this libhdf5 does not have (a plugin in HDF5_PLUGIN_PATH may "
                    "provide it)");
    }
  }
  if (H5Pget_layout(create.get()) != H5D_CHUNKED) return {};
  const int rank = H5Pget_chunk(create.get(), 0, nullptr);
  if (rank <= 0) hdf5_fail(path, variable, "cannot read its chunk shape");
  std::vector<hsize_t> chunk(static_cast<std::size_t>(rank));
  if (H5Pget_chunk(create.get(), rank, chunk.data()) < 0) {
    hdf5_fail(path, variable, "cannot read its chunk shape");
  }
  return chunk;
}

}  // namespace stoke::detail

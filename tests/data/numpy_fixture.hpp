#pragma once
/// @file
/// The files numpy writes for the npy/npz tests (write_npy_fixtures.py, run once per test
/// process into a directory of its own), the values they hold, and `overwrite` (which shows
/// whether a shard views its file).

#include <fcntl.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include <stoke/data/sources/array_shard.hpp>

#include "npy_files.hpp"
#include "python_fixtures.hpp"

namespace stoke::testing {

/// Value `i` (flat, row-major) of every array write_npy_fixtures.py writes of element type `T`.
template <class T>
T numpy_value(std::size_t i) {
  if constexpr (std::is_same_v<T, bool>) {
    return i % 3 == 0;
  } else if constexpr (std::is_floating_point_v<T>) {
    return static_cast<T>(static_cast<double>(i) * 0.25 - 3.0);
  } else {
    return static_cast<T>(static_cast<std::uint64_t>(i) * 2654435761ULL + 12345ULL);
  }
}

/// Expects `values` to hold the formula's values from flat index `first` on.
template <class T>
void expect_numpy_values(std::span<const T> values, std::size_t first = 0) {
  for (std::size_t i = 0; i < values.size(); ++i) {
    ASSERT_EQ(values[i], numpy_value<T>(first + i)) << "at flat index " << first + i;
  }
}

/// Expects `shard` to hold `T`, shape `shape` and the formula's values (read whatever the
/// shard's alignment: a stored npz member lies where the archive put it).
template <class T>
void expect_numpy_array(const ArrayShard& shard, const std::vector<std::size_t>& shape) {
  ASSERT_EQ(shard.info(), (ArrayInfo{dtype_of<T>(), shape})) << describe(shard.info());
  expect_numpy_values<T>(shard.array_row<T>(0, shard.rows(), shard.owner()).values);
}

/// Writes `value` at byte `offset` of the file `path`: a shard that views the mapped file sees
/// it, a copy does not.
template <class T>
void overwrite(const std::filesystem::path& path, std::size_t offset, T value) {
  const int fd = ::open(path.c_str(), O_WRONLY);
  ASSERT_GE(fd, 0) << path;
  ASSERT_EQ(::pwrite(fd, &value, sizeof value, static_cast<off_t>(offset)),
            static_cast<ssize_t>(sizeof value));
  ::close(fd);
}

/// The script that writes the numpy files.
struct NumpyFixtureScript {
  static constexpr const char* python = STOKE_TEST_PYTHON;
  static constexpr const char* path = STOKE_NPY_FIXTURE_SCRIPT;
  static constexpr const char* prefix = "stoke-npy-fixtures";
  static constexpr const char* needs = "numpy";
};

/// A test of the files numpy wrote; skipped, saying why, when the interpreter lacks numpy.
class NumpyFiles : public PythonFixtureSuite<NumpyFixtureScript> {
 protected:
  /// The file `name` numpy wrote.
  static std::filesystem::path file(const std::string& name) { return fixture_dir() / name; }
};

/// A float32 npy file (version `version`) of `shape` whose values are `numpy_value`'s.
inline FileBytes float_npy(const std::vector<std::size_t>& shape, int version = 1) {
  std::size_t count = 1;
  for (const std::size_t d : shape) count *= d;
  std::vector<float> values(count);
  for (std::size_t i = 0; i < count; ++i) values[i] = numpy_value<float>(i);
  return npy_file(npy_header("<f4", shape), le_bytes(values), version);
}

}  // namespace stoke::testing

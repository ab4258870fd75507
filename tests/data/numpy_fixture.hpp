#pragma once
/// @file
/// The files numpy writes for the npy/npz tests (write_npy_fixtures.py, run once per test
/// process into a directory of its own), and the values they hold.

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <span>
#include <string>
#include <system_error>
#include <type_traits>

#include <stoke/data/sources/array_shard.hpp>

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

/// Expects `shard` to hold `T`, shape `shape` and the formula's values.
template <class T>
void expect_numpy_array(const ArrayShard& shard, const std::vector<std::size_t>& shape) {
  ASSERT_EQ(shard.info(), (ArrayInfo{dtype_of<T>(), shape})) << describe(shard.info());
  expect_numpy_values<T>(shard.values<T>(0, shard.rows()));
}

/// A test of the files numpy wrote; skipped, saying why, when the interpreter lacks numpy.
class NumpyFiles : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = std::filesystem::temp_directory_path() /
           ("stoke-npy-fixtures-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
    const std::string python = STOKE_TEST_PYTHON;
    if (python.empty()) {
      skip_ = "no Python interpreter (STOKE_PYTHON) to write the numpy files";
      return;
    }
    const std::string command =
        "'" + python + "' '" + STOKE_NPY_FIXTURE_SCRIPT + "' '" + dir_.string() + "'";
    const int status = std::system(command.c_str());
    const int code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    if (code == 77) skip_ = "numpy cannot be imported by " + python;
    if (code != 0 && code != 77)
      failure_ = command + " failed with status " + std::to_string(status);
  }
  static void TearDownTestSuite() {
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
  }
  void SetUp() override {
    ASSERT_TRUE(failure_.empty()) << failure_;
    if (!skip_.empty()) GTEST_SKIP() << skip_;
  }

  /// The file `name` numpy wrote.
  static std::filesystem::path file(const std::string& name) { return dir_ / name; }

 private:
  static inline std::filesystem::path dir_;
  static inline std::string skip_;
  static inline std::string failure_;
};

}  // namespace stoke::testing

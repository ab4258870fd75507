#pragma once
/// @file
/// A test suite whose files a Python script writes, once per test process, into a directory of
/// its own: numpy's arrays, Pillow's images. Its tests skip, saying why, when the interpreter
/// lacks the script's packages (the script then exits with 77), and fail when it fails.

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <system_error>

namespace stoke::testing {

/// The base of such a suite. `Script` names the script and what it needs:
/// `Script::path` (the script), `Script::prefix` (of the directory's name), `Script::needs`
/// (the packages, for the skip message); `Script::python` is the interpreter (may be empty).
template <class Script>
class PythonFixtureSuite : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = std::filesystem::temp_directory_path() /
           (std::string(Script::prefix) + "-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
    const std::string python = Script::python;
    if (python.empty()) {
      skip_ = "no Python interpreter (STOKE_PYTHON) to write the test files";
      return;
    }
    const std::string command = "'" + python + "' '" + Script::path + "' '" + dir_.string() + "'";
    const int status = std::system(command.c_str());
    const int code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    if (code == 77) skip_ = std::string(Script::needs) + " cannot be imported by " + python;
    if (code != 0 && code != 77) {
      failure_ = command + " failed with status " + std::to_string(status);
    }
  }
  static void TearDownTestSuite() {
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
  }
  void SetUp() override {
    ASSERT_TRUE(failure_.empty()) << failure_;
    if (!skip_.empty()) GTEST_SKIP() << skip_;
  }

  /// The directory the script wrote into.
  static const std::filesystem::path& fixture_dir() { return dir_; }

 private:
  static inline std::filesystem::path dir_;
  static inline std::string skip_;
  static inline std::string failure_;
};

}  // namespace stoke::testing

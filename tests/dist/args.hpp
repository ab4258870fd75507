#pragma once
/// @file
/// `--name value` options of the distributed test programs.

#include <cstddef>
#include <stdexcept>
#include <string>
#include <string_view>

namespace stoke::testing {

/// The value after `--name` in `argv`, or `fallback`.
inline std::string option(int argc, char** argv, std::string_view name, std::string fallback) {
  for (int i = 1; i + 1 < argc; ++i) {
    if (argv[i] == name) return argv[i + 1];
  }
  return fallback;
}

/// The number after `--name` in `argv`, or `fallback`.
inline std::size_t number_option(int argc, char** argv, std::string_view name,
                                 std::size_t fallback) {
  const std::string text = option(argc, argv, name, std::to_string(fallback));
  try {
    return std::stoul(text);
  } catch (const std::exception&) {
    throw std::invalid_argument(std::string(name) + " needs a number, not '" + text + "'");
  }
}

}  // namespace stoke::testing

#pragma once
/// @file
/// Reads a count from an environment variable, with an error that names the variable.

#include <charconv>
#include <cstddef>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>

#include <stoke/core/error.hpp>

namespace stoke {

/// The count in the environment variable `name`, or `std::nullopt` when it is not set.
/// Throws `InputError` naming the variable and its value when that is not a decimal count.
inline std::optional<std::size_t> env_count(const char* name) {
  const char* text = std::getenv(name);
  if (text == nullptr) return std::nullopt;
  const std::string_view value(text);
  std::size_t count = 0;
  const auto [end, error] = std::from_chars(value.data(), value.data() + value.size(), count);
  if (error != std::errc{} || end != value.data() + value.size()) {
    throw InputError("stoke: the environment variable " + std::string(name) + " is '" +
                     std::string(value) + "', not a count");
  }
  return count;
}

}  // namespace stoke

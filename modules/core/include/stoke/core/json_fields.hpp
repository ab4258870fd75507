#pragma once
/// @file
/// Checked reads of the fields of a JSON document stoke wrote (a loader state, a checkpoint's
/// metadata): each wrong or missing field is an `InputError` that names the document and the
/// field and quotes the value, briefly and without recursion (a value nested 100,000 deep is
/// described, not printed).

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include <stoke/core/error.hpp>

namespace stoke {

/// The most characters of a string or number that `json_excerpt` quotes.
inline constexpr std::size_t json_excerpt_chars = 40;

/// `value` for an error message: a scalar as its JSON text (cut after `json_excerpt_chars`
/// characters), an array or object by its kind and size. Never recurses.
inline std::string json_excerpt(const nlohmann::json& value) {
  if (value.is_array()) return "an array of " + std::to_string(value.size()) + " elements";
  if (value.is_object()) return "an object of " + std::to_string(value.size()) + " fields";
  std::string text = value.dump();
  if (text.size() > json_excerpt_chars) text = text.substr(0, json_excerpt_chars) + "...";
  return text;
}

/// The fields of the JSON document `where` names (e.g. "loader state").
class JsonFields {
 public:
  /// Reads the fields of `object`; `where` names it in errors.
  JsonFields(const nlohmann::json& object, std::string where)
      : object_(object), where_(std::move(where)) {}

  /// Field `name`; missing (or the document not an object) is an `InputError`.
  [[nodiscard]] const nlohmann::json& at(std::string_view name) const {
    if (!object_.is_object() || !object_.contains(name)) {
      throw InputError("stoke: " + where_ + " has no field \"" + std::string(name) + "\"");
    }
    return object_.at(name);
  }

  /// Field `name` as a non-negative integer of at most `max`.
  [[nodiscard]] std::uint64_t count(
      std::string_view name, std::uint64_t max = std::numeric_limits<std::uint64_t>::max()) const {
    const nlohmann::json& value = at(name);
    if (!value.is_number_unsigned()) bad(name, value, "is not a non-negative integer");
    const auto number = value.get<std::uint64_t>();
    if (number > max) bad(name, value, "is above " + std::to_string(max));
    return number;
  }

  /// Field `name` as a count that fits `std::size_t`.
  [[nodiscard]] std::size_t size(std::string_view name) const {
    return static_cast<std::size_t>(count(name, std::numeric_limits<std::size_t>::max()));
  }

  /// Field `name` as `true` or `false`.
  [[nodiscard]] bool flag(std::string_view name) const {
    const nlohmann::json& value = at(name);
    if (!value.is_boolean()) bad(name, value, "is not true or false");
    return value.get<bool>();
  }

  /// Field `name` as a finite number.
  [[nodiscard]] double finite(std::string_view name) const {
    const nlohmann::json& value = at(name);
    if (!value.is_number() || !std::isfinite(value.get<double>())) {
      bad(name, value, "is not a finite number");
    }
    return value.get<double>();
  }

 private:
  [[noreturn]] void bad(std::string_view name, const nlohmann::json& value,
                        const std::string& why) const {
    throw InputError("stoke: " + where_ + " field \"" + std::string(name) + "\" " + why + ": " +
                     json_excerpt(value));
  }

  const nlohmann::json& object_;
  std::string where_;
};

}  // namespace stoke

#pragma once
/// @file
/// The argument checks of the augmentation builders and of `Normalization`: each throws
/// `UsageError` naming the augmentation and the value it refuses.

#include <array>
#include <cmath>
#include <cstdint>
#include <sstream>
#include <string>
#include <string_view>

#include <stoke/core/error.hpp>

namespace stoke::images::detail {

/// `value` as a short decimal (`0.08`, `-1`, `nan`) for error messages.
[[nodiscard]] inline std::string format_value(double value) {
  std::ostringstream text;
  text << value;
  return text.str();
}

/// `{a, b}` for error messages.
[[nodiscard]] inline std::string format_pair(std::array<float, 2> pair) {
  return "{" + format_value(pair[0]) + ", " + format_value(pair[1]) + "}";
}

/// Throws unless both sides of an output size are positive.
inline void check_output_size(std::string_view augmentation, std::uint32_t height,
                              std::uint32_t width) {
  if (height == 0 || width == 0) {
    throw UsageError("stoke: " + std::string(augmentation) + ": output size " +
                     std::to_string(height) + "x" + std::to_string(width) +
                     " must be positive on both sides");
  }
}

/// Throws unless `scale` lies in (0, 1] and is ordered.
inline void check_crop_scale(std::string_view augmentation, std::array<float, 2> scale) {
  const auto inside = [](float s) { return s > 0.0F && s <= 1.0F; };  // false for NaN
  if (!inside(scale[0]) || !inside(scale[1]) || scale[0] > scale[1]) {
    throw UsageError("stoke: " + std::string(augmentation) + ": scale " + format_pair(scale) +
                     " must lie in (0, 1] with scale[0] <= scale[1]");
  }
}

/// Throws unless `ratio` is positive, finite and ordered.
inline void check_crop_ratio(std::string_view augmentation, std::array<float, 2> ratio) {
  const auto positive = [](float r) { return r > 0.0F && std::isfinite(r); };
  if (!positive(ratio[0]) || !positive(ratio[1]) || ratio[0] > ratio[1]) {
    throw UsageError("stoke: " + std::string(augmentation) + ": ratio " + format_pair(ratio) +
                     " must be positive and finite with ratio[0] <= ratio[1]");
  }
}

/// Throws unless `probability` lies in [0, 1].
inline void check_probability(std::string_view augmentation, float probability) {
  if (!(probability >= 0.0F && probability <= 1.0F)) {
    throw UsageError("stoke: " + std::string(augmentation) + ": probability " +
                     format_value(probability) + " must lie in [0, 1]");
  }
}

/// Throws unless the jitter strength `value` of `what` is finite and not negative.
inline void check_jitter(std::string_view augmentation, std::string_view what, float value) {
  if (!(value >= 0.0F && std::isfinite(value))) {
    throw UsageError("stoke: " + std::string(augmentation) + ": " + std::string(what) + " " +
                     format_value(value) + " must be finite and at least 0");
  }
}

}  // namespace stoke::images::detail

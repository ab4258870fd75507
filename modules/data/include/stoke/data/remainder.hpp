#pragma once
/// @file
/// `Remainder`: what a loader does with the samples that do not fill its last batch, and the
/// policy's name in a saved state.

#include <initializer_list>
#include <optional>
#include <string_view>

namespace stoke {

/// What to do with the samples that do not fill the last batch (or the last round of
/// batches across the shares of a split).
enum class Remainder {
  partial,  ///< keep them as a smaller last batch (single loaders only)
  drop,     ///< drop them; every share runs the same number of full batches
  pad,      ///< pad by wrapping around to the start; padded items are reported in each batch
};

/// The policy's name: `"partial"`, `"drop"` or `"pad"`.
[[nodiscard]] constexpr std::string_view remainder_name(Remainder remainder) noexcept {
  switch (remainder) {
    case Remainder::drop:
      return "drop";
    case Remainder::pad:
      return "pad";
    case Remainder::partial:
      break;
  }
  return "partial";
}

/// The policy named `name`, or nothing for another name.
[[nodiscard]] constexpr std::optional<Remainder> remainder_named(std::string_view name) noexcept {
  for (const Remainder remainder : {Remainder::partial, Remainder::drop, Remainder::pad}) {
    if (remainder_name(remainder) == name) return remainder;
  }
  return std::nullopt;
}

}  // namespace stoke

#pragma once
/// @file
/// The element types of Megatron-LM's indexed dataset (`.bin` + `.idx`) and their codes in the
/// `.idx` header: `megatron_dtype` (code to `DType`), `megatron_code` (`DType` to code).

#include <array>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <utility>

#include <stoke/data/sources/array_shard.hpp>

namespace stoke {

namespace detail {

/// Megatron's codes, 1 to 8, and the types they stand for.
inline constexpr std::array<std::pair<std::uint8_t, DType>, 8> megatron_codes{{
    {1, DType::u8},
    {2, DType::i8},
    {3, DType::i16},
    {4, DType::i32},
    {5, DType::i64},
    {6, DType::f64},
    {7, DType::f32},
    {8, DType::u16},
}};

}  // namespace detail

/// The token type of a Megatron dtype code (1 uint8, 2 int8, 3 int16, 4 int32, 5 int64,
/// 6 float64, 7 float32, 8 uint16); none for any other code.
constexpr std::optional<DType> megatron_dtype(std::uint8_t code) noexcept {
  for (const auto& [known, dtype] : detail::megatron_codes) {
    if (known == code) return dtype;
  }
  return std::nullopt;
}

/// The Megatron dtype code of `dtype`; 0 (no code) for a type the format has none for (bool,
/// uint32, uint64).
constexpr std::uint8_t megatron_code(DType dtype) noexcept {
  for (const auto& [code, known] : detail::megatron_codes) {
    if (known == dtype) return code;
  }
  return 0;
}

/// Whether a token store can hold tokens of type `T` (Megatron has a code for it).
template <class T>
concept TokenType = std::same_as<T, std::uint8_t> || std::same_as<T, std::int8_t> ||
                    std::same_as<T, std::int16_t> || std::same_as<T, std::uint16_t> ||
                    std::same_as<T, std::int32_t> || std::same_as<T, std::int64_t> ||
                    std::same_as<T, float> || std::same_as<T, double>;

}  // namespace stoke

#pragma once
/// @file
/// stoke's element types as DLPack types: the one mapping that both consumers of DLPack use,
/// the Python package (`stoke_loader`'s NumPy arrays and DLPack capsules) and the libtorch
/// adapter (`stoke::libtorch`'s `at::fromDLPack`). It needs neither Python nor torch: the
/// values are DLPack's ABI (dlpack.h, v1.1), which each consumer checks against its own copy of
/// dlpack.h at compile time.

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <string>

#include <stoke/core/error.hpp>
#include <stoke/data/sources/array_shard.hpp>

namespace stoke::dlpack {

/// The kind of an element (dlpack.h's `DLDataTypeCode`: `kDLInt`, `kDLUInt`, `kDLFloat`,
/// `kDLBool`).
enum class TypeCode : std::uint8_t {
  signed_integer = 0,    ///< `kDLInt`
  unsigned_integer = 1,  ///< `kDLUInt`
  floating = 2,          ///< `kDLFloat`
  boolean = 6,           ///< `kDLBool`
};

/// Where a tensor's memory is (dlpack.h's `DLDeviceType`).
enum class DeviceType : std::int32_t {
  cpu = 1,   ///< `kDLCPU`: host memory
  cuda = 2,  ///< `kDLCUDA`: CUDA device memory
};

/// An element type as DLPack says it (dlpack.h's `DLDataType`, field for field): its kind,
/// its bits and its lanes (1: stoke has no vector elements).
struct DataType {
  std::uint8_t code = 0;    ///< a `TypeCode`
  std::uint8_t bits = 0;    ///< bits per element (8 for `bool`)
  std::uint16_t lanes = 1;  ///< elements per value

  friend constexpr bool operator==(const DataType&, const DataType&) = default;
};

/// An element type that has a DLPack type.
///
/// Requirements, one of:
/// 1. `T` is `bool`;
/// 2. `T` is a signed or unsigned integer of 8, 16, 32 or 64 bits, or `std::byte` (as an
///    unsigned 8-bit integer);
/// 3. `T` is `float` or `double`.
template <class T>
concept Element =
    std::same_as<T, bool> || std::same_as<T, std::byte> ||
    (std::integral<T> && (sizeof(T) == 1 || sizeof(T) == 2 || sizeof(T) == 4 || sizeof(T) == 8)) ||
    std::same_as<T, float> || std::same_as<T, double>;

/// The DLPack type of the element type `T`.
template <Element T>
constexpr DataType data_type_of() noexcept {
  constexpr auto bits = static_cast<std::uint8_t>(sizeof(T) * 8);
  if constexpr (std::same_as<T, bool>) {
    return {static_cast<std::uint8_t>(TypeCode::boolean), 8, 1};
  } else if constexpr (std::same_as<T, std::byte> || std::unsigned_integral<T>) {
    return {static_cast<std::uint8_t>(TypeCode::unsigned_integer), bits, 1};
  } else if constexpr (std::integral<T>) {
    return {static_cast<std::uint8_t>(TypeCode::signed_integer), bits, 1};
  } else {
    return {static_cast<std::uint8_t>(TypeCode::floating), bits, 1};
  }
}

/// The DLPack type of stoke's element type `dtype` (what `data_type_of` gives for the C++ type
/// that `dtype_of` names `dtype`). Throws `UsageError` for a value outside `DType`.
constexpr DataType data_type(DType dtype) {
  const auto bits = static_cast<std::uint8_t>(dtype_size(dtype) * 8);
  const auto of = [bits](TypeCode code) {
    return DataType{static_cast<std::uint8_t>(code), bits, 1};
  };
  switch (dtype) {
    case DType::boolean:
      return of(TypeCode::boolean);
    case DType::u8:
    case DType::u16:
    case DType::u32:
    case DType::u64:
      return of(TypeCode::unsigned_integer);
    case DType::i8:
    case DType::i16:
    case DType::i32:
    case DType::i64:
      return of(TypeCode::signed_integer);
    case DType::f32:
    case DType::f64:
      return of(TypeCode::floating);
  }
  throw UsageError("stoke: DLPack: unknown element type " +
                   std::to_string(static_cast<int>(dtype)));
}

}  // namespace stoke::dlpack

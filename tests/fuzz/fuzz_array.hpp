#pragma once
/// @file
/// What the npy and npz harnesses check of an array they were given: its bytes are the shape's,
/// and every value can be read as its element type.

#include <cstddef>
#include <cstdlib>

#include <stoke/data/sources/array_shard.hpp>

namespace stoke::fuzz {

/// Reads every value of `shard` as its element type, wherever its bytes lie (`bool` as bytes: each
/// must be 0 or 1 to be a `bool`, which the readers do not check); aborts when the sizes disagree.
inline void read_every_value(const ArrayShard& shard) {
  const ArrayInfo& info = shard.info();
  if (shard.bytes().size() != info.rows() * info.row_bytes()) std::abort();
  const auto sum = [&]<class T>(T) {
    double total = 0;
    const ArrayRow<T> all = shard.array_row<T>(0, shard.rows(), shard.owner());  // any alignment
    for (const T value : all.values) total += static_cast<double>(value);
    return total;
  };
  volatile double total = 0;
  switch (info.dtype) {
    case DType::boolean: {
      for (const std::byte b : shard.bytes()) total = total + std::to_integer<int>(b);
      break;
    }
    case DType::u8:
      total = sum(std::uint8_t{});
      break;
    case DType::i8:
      total = sum(std::int8_t{});
      break;
    case DType::u16:
      total = sum(std::uint16_t{});
      break;
    case DType::i16:
      total = sum(std::int16_t{});
      break;
    case DType::u32:
      total = sum(std::uint32_t{});
      break;
    case DType::i32:
      total = sum(std::int32_t{});
      break;
    case DType::u64:
      total = sum(std::uint64_t{});
      break;
    case DType::i64:
      total = sum(std::int64_t{});
      break;
    case DType::f32:
      total = sum(float{});
      break;
    case DType::f64:
      total = sum(double{});
      break;
  }
}

}  // namespace stoke::fuzz

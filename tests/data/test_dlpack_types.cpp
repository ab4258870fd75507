// stoke::dlpack: the one mapping of stoke's element types to DLPack types, which the Python
// package and the libtorch adapter share. Every DType maps to the code, bits and lanes of
// DLPack's ABI (dlpack.h v1.1), the same as its C++ type does, and a value outside DType is
// refused with an error naming it.
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <tuple>
#include <vector>

#include <stoke/core/error.hpp>
#include <stoke/data/dlpack_types.hpp>

namespace {

using stoke::DType;
using stoke::dlpack::DataType;
using stoke::dlpack::TypeCode;

/// `{code, bits, 1}`, written with dlpack.h's numbers (kDLInt 0, kDLUInt 1, kDLFloat 2,
/// kDLBool 6), not with `TypeCode`, so that a wrong enumerator fails here.
constexpr DataType dl(std::uint8_t code, std::uint8_t bits) {
  return {code, bits, 1};
}

TEST(DlpackTypes, EveryDTypeHasDlpacksCodeBitsAndOneLane) {
  const std::vector<std::tuple<DType, DataType>> expected{
      {DType::boolean, dl(6, 8)}, {DType::u8, dl(1, 8)},   {DType::i8, dl(0, 8)},
      {DType::u16, dl(1, 16)},    {DType::i16, dl(0, 16)}, {DType::u32, dl(1, 32)},
      {DType::i32, dl(0, 32)},    {DType::u64, dl(1, 64)}, {DType::i64, dl(0, 64)},
      {DType::f32, dl(2, 32)},    {DType::f64, dl(2, 64)}};
  for (const auto& [dtype, type] : expected) {
    const DataType got = stoke::dlpack::data_type(dtype);
    EXPECT_EQ(got, type) << stoke::dtype_name(dtype) << ": code " << int{got.code} << ", bits "
                         << int{got.bits} << ", lanes " << got.lanes;
    EXPECT_EQ(got.bits, stoke::dtype_size(dtype) * 8) << stoke::dtype_name(dtype);
  }
}

TEST(DlpackTypes, ADTypeAndItsCppTypeMapAlike) {
  const auto same = []<class T>() {
    EXPECT_EQ(stoke::dlpack::data_type(stoke::dtype_of<T>()), stoke::dlpack::data_type_of<T>())
        << stoke::dtype_name(stoke::dtype_of<T>());
  };
  same.operator()<bool>();
  same.operator()<std::uint8_t>();
  same.operator()<std::int8_t>();
  same.operator()<std::uint16_t>();
  same.operator()<std::int16_t>();
  same.operator()<std::uint32_t>();
  same.operator()<std::int32_t>();
  same.operator()<std::uint64_t>();
  same.operator()<std::int64_t>();
  same.operator()<float>();
  same.operator()<double>();
}

TEST(DlpackTypes, BytesAreUnsignedEightBitIntegers) {
  EXPECT_EQ(stoke::dlpack::data_type_of<std::byte>(), dl(1, 8));
  EXPECT_EQ(stoke::dlpack::data_type_of<char32_t>(), dl(1, 32));
  static_assert(stoke::dlpack::Element<std::byte>);
  static_assert(!stoke::dlpack::Element<long double>);
  static_assert(!stoke::dlpack::Element<std::string>);
}

TEST(DlpackTypes, TheCodesAreDlpacks) {
  EXPECT_EQ(static_cast<int>(TypeCode::signed_integer), 0);
  EXPECT_EQ(static_cast<int>(TypeCode::unsigned_integer), 1);
  EXPECT_EQ(static_cast<int>(TypeCode::floating), 2);
  EXPECT_EQ(static_cast<int>(TypeCode::boolean), 6);
  EXPECT_EQ(static_cast<int>(stoke::dlpack::DeviceType::cpu), 1);
  EXPECT_EQ(static_cast<int>(stoke::dlpack::DeviceType::cuda), 2);
}

TEST(DlpackTypes, AValueOutsideDTypeIsRefusedNamingIt) {
  try {
    (void)stoke::dlpack::data_type(static_cast<DType>(42));
    FAIL() << "an element type outside DType was mapped";
  } catch (const stoke::UsageError& error) {
    EXPECT_NE(std::string(error.what()).find("unknown element type 42"), std::string::npos)
        << error.what();
  }
}

}  // namespace

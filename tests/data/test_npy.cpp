// Tests of the .npy reader: read_npy_info, load_npy and NpyDataset, on files numpy wrote and
// on files made wrong by hand.
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stoke/core/error.hpp>
#include <stoke/data/dataset.hpp>
#include <stoke/data/sources/npy.hpp>

#include "npy_files.hpp"
#include "numpy_fixture.hpp"
#include "stoke_test_files.hpp"

namespace {

using stoke::ArrayInfo;
using stoke::DType;
using stoke::testing::FileBytes;
using stoke::testing::message_of;
using stoke::testing::npy_file;
using stoke::testing::npy_header;
using stoke::testing::TempDir;
using testing::AllOf;
using testing::HasSubstr;

static_assert(stoke::Dataset<stoke::NpyDataset<float>>);
static_assert(
    std::is_same_v<stoke::dataset_item_t<stoke::NpyDataset<float>>, stoke::ArrayRow<float>>);

using stoke::testing::float_npy;
using stoke::testing::write_file;

/// The InputError message of `read_npy_info` and of `load_npy` on `path` (the same refusal).
std::string npy_refusal(const std::filesystem::path& path) {
  const std::string info = message_of<stoke::InputError>([&] { (void)stoke::read_npy_info(path); });
  const std::string load = message_of<stoke::InputError>([&] { (void)stoke::load_npy(path); });
  EXPECT_EQ(info, load);
  EXPECT_THAT(info, HasSubstr("'" + path.string() + "'"));
  return info;
}

// Files numpy wrote.
using NpyFromNumpy = stoke::testing::NumpyFiles;

template <class T>
void expect_npy(const std::filesystem::path& path, const std::vector<std::size_t>& shape) {
  SCOPED_TRACE(path.string());
  EXPECT_EQ(stoke::read_npy_info(path), (ArrayInfo{stoke::dtype_of<T>(), shape}));
  stoke::testing::expect_numpy_array<T>(stoke::load_npy(path), shape);
}

TEST_F(NpyFromNumpy, ReadsEveryDtypeWithTheValuesNumpyWrote) {
  expect_npy<bool>(file("bool.npy"), {5, 3});
  expect_npy<std::uint8_t>(file("uint8.npy"), {5, 3});
  expect_npy<std::int8_t>(file("int8.npy"), {5, 3});
  expect_npy<std::uint16_t>(file("uint16.npy"), {5, 3});
  expect_npy<std::int16_t>(file("int16.npy"), {5, 3});
  expect_npy<std::uint32_t>(file("uint32.npy"), {5, 3});
  expect_npy<std::int32_t>(file("int32.npy"), {5, 3});
  expect_npy<std::uint64_t>(file("uint64.npy"), {5, 3});
  expect_npy<std::int64_t>(file("int64.npy"), {5, 3});
  expect_npy<float>(file("float32.npy"), {5, 3});
  expect_npy<double>(file("float64.npy"), {5, 3});
}

TEST_F(NpyFromNumpy, ReadsShapesOfOneToFourDimensionsAndEmptyArrays) {
  expect_npy<float>(file("float32_4d.npy"), {2, 3, 4, 5});
  expect_npy<double>(file("float64_1d.npy"), {7});
  expect_npy<float>(file("empty.npy"), {0, 4});
  const ArrayInfo four_d = stoke::read_npy_info(file("float32_4d.npy"));
  EXPECT_EQ(four_d.rows(), 2U);
  EXPECT_EQ(four_d.row_elements(), 60U);
  EXPECT_EQ(four_d.row_bytes(), 240U);
}

TEST_F(NpyFromNumpy, ReadsFormatVersions2And3) {
  expect_npy<float>(file("version2.npy"), {3, 4});
  expect_npy<float>(file("version3.npy"), {3, 4});
}

TEST_F(NpyFromNumpy, DatasetRowsAreTheRowsOfTheFirstAxis) {
  const stoke::NpyDataset<std::int32_t> dataset(file("int32.npy"));
  ASSERT_EQ(dataset.size(), 5U);
  EXPECT_EQ(dataset.info().row_shape(), (std::vector<std::size_t>{3}));
  for (std::size_t row = 0; row < dataset.size(); ++row) {
    const stoke::ArrayRow<std::int32_t> sample = dataset.get(row);
    ASSERT_EQ(sample.values.size(), 3U);
    ASSERT_NE(sample.owner, nullptr);
    stoke::testing::expect_numpy_values(sample.values, row * 3);
  }
  EXPECT_THAT(message_of<stoke::UsageError>([&] { (void)dataset.get(5); }),
              AllOf(HasSubstr("NpyDataset"), HasSubstr("index 5"), HasSubstr("size 5")));
}

TEST_F(NpyFromNumpy, DatasetRefusesAnotherDtypeNamingBoth) {
  EXPECT_THAT(
      message_of<stoke::InputError>([&] { (void)stoke::NpyDataset<float>(file("float64.npy")); }),
      AllOf(HasSubstr(file("float64.npy").string()), HasSubstr("float64 [5, 3]"),
            HasSubstr("float32")));
}

TEST_F(NpyFromNumpy, RefusesFortranOrderSayingHowToSaveInCOrder) {
  EXPECT_THAT(npy_refusal(file("fortran.npy")),
              AllOf(HasSubstr("Fortran-order"), HasSubstr("np.ascontiguousarray"),
                    HasSubstr("at offset 10")));
}

TEST_F(NpyFromNumpy, RefusesObjectArrays) {
  EXPECT_THAT(npy_refusal(file("object.npy")), AllOf(HasSubstr("object array"), HasSubstr("'|O'")));
}

TEST_F(NpyFromNumpy, RefusesBigEndianSayingHowToSaveLittleEndian) {
  EXPECT_THAT(npy_refusal(file("big_endian.npy")),
              AllOf(HasSubstr("big-endian dtype '>i4' at offset 20"), HasSubstr("astype('<i4')")));
}

TEST_F(NpyFromNumpy, RefusesStructuredAndUnsupportedDtypes) {
  EXPECT_THAT(npy_refusal(file("structured.npy")), HasSubstr("structured dtype"));
  EXPECT_THAT(npy_refusal(file("float16.npy")),
              AllOf(HasSubstr("unsupported dtype '<f2' at offset 20"), HasSubstr("<f4, <f8")));
}

TEST_F(NpyFromNumpy, RefusesA0dArrayForHavingNoFirstAxis) {
  EXPECT_THAT(npy_refusal(file("scalar.npy")),
              AllOf(HasSubstr("0-d array"), HasSubstr("no first axis"), HasSubstr("atleast_1d")));
}

// Files made by hand.

TEST(NpyFile, ReadsHeadersOtherWritersMayWrite) {
  const TempDir dir;
  // Double quotes, keys in another order, no newline, no padding, a 1-tuple without a comma.
  const std::string header = "{\"shape\": (2), 'fortran_order': False, 'descr': '<u2'}";
  const auto path = write_file(dir, "a.npy", npy_file(header, {1, 0, 2, 0}, 1, 0));
  EXPECT_EQ(stoke::read_npy_info(path), (ArrayInfo{DType::u16, {2}}));
  const stoke::ArrayShard shard = stoke::load_npy(path);
  const auto values = shard.values<std::uint16_t>(0, 2);
  EXPECT_EQ(values[0], 1);
  EXPECT_EQ(values[1], 2);
}

TEST(NpyFile, MapsTheFileInPlace) {
  const TempDir dir;
  const auto path = write_file(dir, "a.npy", float_npy({4, 2}));
  const stoke::ArrayShard shard = stoke::load_npy(path);
  ASSERT_EQ(shard.values<float>(3)[1], stoke::testing::numpy_value<float>(7));
  // A write to the file shows through the mapping: the shard views the file, not a copy.
  const float changed = 42.5F;
  stoke::testing::overwrite(path, 128 + 7 * 4, changed);
  EXPECT_EQ(shard.values<float>(3)[1], changed);
}

TEST(NpyFile, MapsDataThatIsNotAlignedForItsTypeInPlace) {
  const TempDir dir;
  std::vector<double> values{1.5, -2.0, 3.25};
  // A header of 50 bytes: the data starts at offset 60, not a multiple of 8.
  const auto path = write_file(dir, "a.npy",
                               npy_file("{'descr':'<f8','fortran_order':False,'shape':(3,)}",
                                        stoke::testing::le_bytes(values), 1, 0));
  const stoke::ArrayShard shard = stoke::load_npy(path);
  EXPECT_FALSE(shard.aligned());
  std::vector<double> read(3);
  shard.copy_values<double>(0, 3, read);
  EXPECT_EQ(read, values);
  EXPECT_THROW((void)shard.values<double>(0, 3), stoke::UsageError);
  const stoke::NpyDataset<double> rows(path);
  EXPECT_EQ(rows.get(2).values[0], 3.25);
  // A write to the file shows through the mapping: the shard views the file, not a copy.
  const double changed = -8.0;
  stoke::testing::overwrite(path, 60 + 8, changed);
  EXPECT_EQ(shard.array_row<double>(1, 1, shard.owner()).values[0], changed);
}

TEST(NpyFile, RefusesAMissingFileAndOneThatIsNotRegular) {
  const TempDir dir;
  EXPECT_THAT(npy_refusal(dir / "missing.npy"), HasSubstr("No such file"));
  EXPECT_THAT(npy_refusal(dir.path()), HasSubstr("not a regular file"));
}

TEST(NpyFile, RefusesABadMagicStringAtOffset0) {
  const TempDir dir;
  FileBytes bytes = float_npy({2});
  bytes[1] = 'X';
  EXPECT_THAT(npy_refusal(write_file(dir, "a.npy", bytes)),
              AllOf(HasSubstr("wrong magic string 0x935855"), HasSubstr("at offset 0")));
}

TEST(NpyFile, RefusesATruncatedPreambleAndAnEmptyFile) {
  const TempDir dir;
  const FileBytes whole = float_npy({2});
  EXPECT_THAT(npy_refusal(write_file(dir, "a.npy", FileBytes(whole.begin(), whole.begin() + 9))),
              AllOf(HasSubstr("truncated header"), HasSubstr("at offset 9")));
  EXPECT_THAT(npy_refusal(write_file(dir, "empty.npy", {})),
              AllOf(HasSubstr("truncated header"), HasSubstr("at offset 0")));
}

TEST(NpyFile, RefusesAnUnknownVersionAtOffset6) {
  const TempDir dir;
  FileBytes bytes = float_npy({2});
  bytes[6] = 4;
  EXPECT_THAT(npy_refusal(write_file(dir, "a.npy", bytes)),
              AllOf(HasSubstr("version 4.0 at offset 6"), HasSubstr("1.0, 2.0 and 3.0")));
}

TEST(NpyFile, RefusesAHeaderLongerThanTheFileOrTheLimit) {
  const TempDir dir;
  FileBytes bytes = float_npy({2});
  bytes[8] = 0xFF;  // 0x00FF: beyond the 136-byte file (128 header bytes, then 8)
  EXPECT_THAT(npy_refusal(write_file(dir, "a.npy", bytes)),
              AllOf(HasSubstr("truncated header"), HasSubstr("at offset 265"),
                    HasSubstr("past the end at offset 136")));
  FileBytes v2 = float_npy({2}, 2);
  v2[10] = 0x20;  // 0x00200074: 2 MiB
  EXPECT_THAT(npy_refusal(write_file(dir, "b.npy", v2)),
              AllOf(HasSubstr("header length 2097268 at offset 8"), HasSubstr("1048576")));
}

TEST(NpyFile, RefusesMalformedHeadersNamingTheOffset) {
  const TempDir dir;
  const auto refused = [&](const std::string& header) {
    return npy_refusal(write_file(dir, "a.npy", npy_file(header, {0, 0, 0, 0})));
  };
  EXPECT_THAT(refused("{'descr' '<f4', 'fortran_order': False, 'shape': (1,), }"),
              HasSubstr("malformed header: expected ':' at offset 19"));
  EXPECT_THAT(refused("{'descr': '<f4', 'fortran_order': Maybe, 'shape': (1,), }"),
              HasSubstr("expected True or False at offset 44"));
  EXPECT_THAT(refused("{'descr': '<f4', 'fortran_order': False, 'shape': (-1,), }"),
              HasSubstr("expected a dimension"));
  EXPECT_THAT(refused("{'descr': '<f4', 'fortran_order': False, 'shape': [1], }"),
              HasSubstr("expected '('"));
  EXPECT_THAT(refused("{'descr': '<f4', 'fortran_order': False, }"), HasSubstr("lacks 'shape'"));
  EXPECT_THAT(refused("{'descr': '<f4', 'fortran_order': False, 'shape': (1,), 'x': 1}"),
              HasSubstr("unexpected key 'x' at offset 66"));
  EXPECT_THAT(refused("{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (1,)}"),
              HasSubstr("unexpected key 'descr'"));
  EXPECT_THAT(refused("{'descr': '<f4', 'fortran_order': False, 'shape': (1,), } x"),
              HasSubstr("unexpected text after the header dictionary"));
  EXPECT_THAT(refused("{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999,)}"),
              HasSubstr("does not fit in 64 bits"));
}

TEST(NpyFile, RefusesShapesWhoseBytesOverflowEvenWithAZeroExtent) {
  const TempDir dir;
  for (const std::string shape : {"(4294967296, 4294967296)", "(0, 4294967296, 4294967296)"}) {
    const std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': " + shape + "}";
    EXPECT_THAT(npy_refusal(write_file(dir, "a.npy", npy_file(header, {}))),
                AllOf(HasSubstr("declares more bytes than the address space holds"),
                      HasSubstr("at offset 10")));
  }
}

TEST(NpyFile, RefusesDataShorterOrLongerThanTheShapeNeeds) {
  const TempDir dir;
  FileBytes bytes = float_npy({3, 2});
  FileBytes shorter(bytes.begin(), bytes.end() - 3);
  EXPECT_THAT(npy_refusal(write_file(dir, "short.npy", shorter)),
              AllOf(HasSubstr("truncated data: float32 [3, 2] needs 24 bytes of data at "
                              "offset 128"),
                    HasSubstr("ends at offset 149 after 21")));
  bytes.push_back(0);
  EXPECT_THAT(npy_refusal(write_file(dir, "long.npy", bytes)),
              HasSubstr("1 unexpected bytes after the data at offset 152"));
}

}  // namespace

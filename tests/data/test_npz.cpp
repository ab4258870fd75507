// Tests of the .npz reader: npz_members, load_npz and NpzFile, on archives numpy wrote
// (np.savez, np.savez_compressed) and on zip archives made by hand (members at unaligned
// offsets, read in place also through ShardedArrays, and archives made wrong).
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stoke/core/error.hpp>
#include <stoke/data/sources/npz.hpp>
#include <stoke/data/sources/sharded_arrays.hpp>

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
using stoke::testing::overwrite;
using stoke::testing::TempDir;
using stoke::testing::zip_file;
using stoke::testing::ZipMember;
using testing::AllOf;
using testing::ElementsAre;
using testing::HasSubstr;

using stoke::testing::float_npy;
using stoke::testing::write_file;

/// The offset of the central directory of a zip without a comment (from its end record).
std::size_t directory_offset(const FileBytes& zip) {
  const std::size_t at = zip.size() - 22 + 16;
  return zip[at] | zip[at + 1] << 8U | zip[at + 2] << 16U | std::size_t{zip[at + 3]} << 24U;
}

void patch32(FileBytes& bytes, std::size_t at, std::uint32_t value) {
  for (int i = 0; i < 4; ++i) bytes[at + i] = static_cast<std::uint8_t>(value >> (8 * i));
}

/// The InputError of `load_npz(path, name)`, which must name the file.
std::string npz_refusal(const std::filesystem::path& path, const std::string& name = "a") {
  const std::string message =
      message_of<stoke::InputError>([&] { (void)stoke::load_npz(path, name); });
  EXPECT_THAT(message, HasSubstr("npz file '" + path.string() + "'"));
  return message;
}

const std::vector<std::string> numpy_arrays{
    "bool",   "uint8", "int8",    "uint16",  "int16",      "uint32",     "int32",
    "uint64", "int64", "float32", "float64", "float32_4d", "float64_1d", "empty"};

// Archives numpy wrote.
using NpzFromNumpy = stoke::testing::NumpyFiles;

void expect_numpy_arrays(const std::filesystem::path& path) {
  using stoke::testing::expect_numpy_array;
  const auto load = [&](const std::string& name) { return stoke::load_npz(path, name); };
  expect_numpy_array<bool>(load("bool"), {5, 3});
  expect_numpy_array<std::uint8_t>(load("uint8"), {5, 3});
  expect_numpy_array<std::int8_t>(load("int8"), {5, 3});
  expect_numpy_array<std::uint16_t>(load("uint16"), {5, 3});
  expect_numpy_array<std::int16_t>(load("int16"), {5, 3});
  expect_numpy_array<std::uint32_t>(load("uint32"), {5, 3});
  expect_numpy_array<std::int32_t>(load("int32"), {5, 3});
  expect_numpy_array<std::uint64_t>(load("uint64"), {5, 3});
  expect_numpy_array<std::int64_t>(load("int64"), {5, 3});
  expect_numpy_array<float>(load("float32"), {5, 3});
  expect_numpy_array<double>(load("float64"), {5, 3});
  expect_numpy_array<float>(load("float32_4d"), {2, 3, 4, 5});
  expect_numpy_array<double>(load("float64_1d"), {7});
  expect_numpy_array<float>(load("empty"), {0, 4});
}

TEST_F(NpzFromNumpy, ListsTheArraysInTheOrderNumpyWroteThem) {
  EXPECT_EQ(stoke::npz_members(file("stored.npz")), numpy_arrays);
  std::vector<std::string> compressed = numpy_arrays;
  compressed.insert(compressed.end(), {"large", "zeros"});
  EXPECT_EQ(stoke::npz_members(file("compressed.npz")), compressed);
  EXPECT_THAT(stoke::npz_members(file("positional.npz")), ElementsAre("arr_0", "arr_1"));
}

TEST_F(NpzFromNumpy, LoadsEveryArrayOfSavez) {
  expect_numpy_arrays(file("stored.npz"));
}

TEST_F(NpzFromNumpy, LoadsEveryArrayOfSavezCompressed) {
  expect_numpy_arrays(file("compressed.npz"));
  stoke::testing::expect_numpy_array<float>(stoke::load_npz(file("compressed.npz"), "large"),
                                            {300000, 4});
  const stoke::ArrayShard zeros = stoke::load_npz(file("compressed.npz"), "zeros");
  ASSERT_EQ(zeros.info(), (ArrayInfo{DType::f64, {1U << 20U}}));
  for (const double x : zeros.values<double>(0, zeros.rows())) ASSERT_EQ(x, 0.0);
}

TEST_F(NpzFromNumpy, NamesAShardByTheArchiveAndTheMember) {
  const stoke::ArrayShard shard = stoke::load_npz(file("positional.npz"), "arr_1");
  EXPECT_EQ(shard.path(), file("positional.npz") / "arr_1.npy");
  stoke::testing::expect_numpy_array<double>(shard, {3});
  // The member's own name works too.
  EXPECT_EQ(stoke::load_npz(file("positional.npz"), "arr_0.npy").info(),
            (ArrayInfo{DType::i16, {2, 2}}));
}

TEST_F(NpzFromNumpy, RefusesAMissingArrayListingTheOnesThereAre) {
  EXPECT_THAT(npz_refusal(file("positional.npz"), "weights"),
              AllOf(HasSubstr("no array 'weights'"), HasSubstr("central directory at offset"),
                    HasSubstr("its arrays: 'arr_0', 'arr_1'")));
}

TEST_F(NpzFromNumpy, Refuses0dMembersButReadsTheOthers) {
  EXPECT_THAT(npz_refusal(file("with_scalar.npz"), "scalar"),
              AllOf(HasSubstr("member 'scalar.npy'"), HasSubstr("0-d array")));
  stoke::testing::expect_numpy_array<float>(stoke::load_npz(file("with_scalar.npz"), "row"),
                                            {1, 2});
}

// Archives made by hand.

TEST(NpzFile, ReadsAnAlignedStoredMemberInPlace) {
  const TempDir dir;
  // The data starts at 30 + 5 (name) + 5 (padding) + 128 (npy header) = 168, aligned for float.
  const auto path = write_file(
      dir, "a.npz", zip_file({{.name = "a.npy", .content = float_npy({4}), .padding = 5}}));
  const stoke::ArrayShard shard = stoke::load_npz(path, "a");
  stoke::testing::expect_numpy_array<float>(shard, {4});
  const float changed = 9.5F;
  overwrite(path, 168 + 4, changed);
  EXPECT_EQ(shard.values<float>(0, 4)[1], changed) << "the shard does not view the file";
}

/// The offset in `file` of the data of the npy file `npy` stored in it (128 bytes in).
std::size_t data_offset(const FileBytes& file, const FileBytes& npy) {
  const auto at = std::search(file.begin(), file.end(), npy.begin(), npy.end());
  EXPECT_NE(at, file.end());
  return static_cast<std::size_t>(at - file.begin()) + 128;
}

TEST(NpzFile, ReadsUnalignedStoredMembersInPlace) {
  const TempDir dir;
  std::vector<std::int64_t> longs(15);
  for (std::size_t i = 0; i < longs.size(); ++i) {
    longs[i] = stoke::testing::numpy_value<std::int64_t>(i);
  }
  const FileBytes floats = float_npy({18});
  const FileBytes ints = npy_file(npy_header("<i8", {5, 3}), stoke::testing::le_bytes(longs));
  // As np.savez lays them out: the data of "f" starts at 30 + 5 + 128 = 163, of "i" at 398.
  const FileBytes zip =
      zip_file({{.name = "f.npy", .content = floats}, {.name = "i.npy", .content = ints}});
  const auto path = write_file(dir, "a.npz", zip);
  const std::size_t f_at = data_offset(zip, floats);
  const std::size_t i_at = data_offset(zip, ints);
  ASSERT_NE(f_at % alignof(float), 0U);
  ASSERT_NE(i_at % alignof(std::int64_t), 0U);

  const stoke::NpzFile npz(path);
  EXPECT_TRUE(npz.in_place("f"));
  EXPECT_TRUE(npz.in_place("i.npy"));
  const stoke::ArrayShard f = npz.load("f");
  const stoke::ArrayShard i = npz.load("i");
  const stoke::ArrayShard i_again = stoke::load_npz(path, "i");
  EXPECT_FALSE(f.aligned());
  EXPECT_FALSE(i.aligned());
  // Both view the one mapping, where the archive put them.
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(i.bytes().data()) -
                reinterpret_cast<std::uintptr_t>(f.bytes().data()),
            i_at - f_at);
  EXPECT_EQ(i.owner(), f.owner());

  // Every reader copes with the alignment, and reads the values exactly.
  stoke::testing::expect_numpy_array<float>(f, {18});
  stoke::testing::expect_numpy_array<std::int64_t>(i, {5, 3});
  stoke::testing::expect_numpy_array<std::int64_t>(i_again, {5, 3});
  std::vector<std::int64_t> row(3);
  i.copy_values<std::int64_t>(4, 1, row);
  EXPECT_THAT(row, ElementsAre(longs[12], longs[13], longs[14]));
  std::int64_t first = 0;
  std::memcpy(&first, i.row_bytes(2).data(), sizeof first);
  EXPECT_EQ(first, longs[6]);
  const stoke::ArrayDataset<std::int64_t> dataset(i);
  stoke::testing::expect_numpy_values<std::int64_t>(dataset.get(3).values, 9);
  EXPECT_THAT(message_of<stoke::UsageError>([&] { (void)i.values<std::int64_t>(0); }),
              AllOf(HasSubstr("'" + (path / "i.npy").string() + "'"),
                    HasSubstr("not aligned for int64"), HasSubstr("copy_values")));
  EXPECT_THAT(message_of<stoke::UsageError>([&] { i.copy_values<std::int64_t>(4, 1, {}); }),
              HasSubstr("into 0 values; they hold 3"));

  // A write to the file shows through every shard: they view the file, not copies.
  overwrite(path, f_at + 5 * sizeof(float), 9.5F);
  overwrite(path, i_at + 13 * sizeof(std::int64_t), std::int64_t{-77});
  EXPECT_EQ(f.array_row<float>(5, 1, f.owner()).values[0], 9.5F);
  EXPECT_EQ(dataset.get(4).values[1], -77);
  EXPECT_EQ(i_again.array_row<std::int64_t>(4, 1, nullptr).values[1], -77);
}

TEST(NpzFile, ShardedArraysReadUnalignedMembersInPlace) {
  const TempDir dir;
  const std::vector<std::size_t> rows{4, 3};
  std::vector<std::filesystem::path> files;
  std::vector<std::size_t> offsets;
  for (std::size_t k = 0, begin = 0; k < rows.size(); begin += rows[k++]) {
    std::vector<float> values;
    for (std::size_t r = begin; r < begin + rows[k]; ++r) {
      for (std::size_t c = 0; c < 3; ++c) values.push_back(static_cast<float>(r * 10 + c) + 0.25F);
    }
    const FileBytes npy =
        npy_file(npy_header("<f4", {rows[k], 3}), stoke::testing::le_bytes(values));
    const FileBytes zip = zip_file({{.name = "x.npy", .content = npy}});
    files.push_back(write_file(dir, "s" + std::to_string(k) + ".npz", zip));
    offsets.push_back(data_offset(zip, npy));
    ASSERT_NE(offsets.back() % alignof(float), 0U);
  }
  const stoke::ArrayFileFormat format{
      .info = [](const std::filesystem::path& p) { return stoke::NpzFile(p).load("x").info(); },
      .load = [](const std::filesystem::path& p) { return stoke::load_npz(p, "x"); }};
  const stoke::ShardedArrays<float> arrays(files, format, {.io_threads = 0});
  ASSERT_EQ(arrays.size(), 7U);
  const auto expect_rows = [](const stoke::ArrayRow<float>& got, std::size_t first,
                              std::size_t count) {
    ASSERT_EQ(got.values.size(), count * 3);
    for (std::size_t j = 0; j < got.values.size(); ++j) {
      EXPECT_EQ(got.values[j], static_cast<float>((first + j / 3) * 10 + j % 3) + 0.25F)
          << "rows from " << first << ", value " << j;
    }
  };
  for (std::size_t r = 0; r < arrays.size(); ++r) expect_rows(arrays.get(r), r, 1);
  expect_rows(arrays.rows(1, 3), 1, 3);  // inside a shard
  expect_rows(arrays.rows(2, 4), 2, 4);  // across the end of the first file
  expect_rows(arrays.rows(4, 3), 4, 3);
  // The shards are mapped, not copied: a write to the file shows in the rows read later.
  overwrite(files[0], offsets[0] + (3 * 3 + 1) * sizeof(float), -1.5F);
  overwrite(files[1], offsets[1] + 2 * sizeof(float), -2.5F);
  EXPECT_EQ(arrays.get(3).values[1], -1.5F);
  EXPECT_EQ(arrays.rows(3, 2).values[5], -2.5F);
  // copy_row: a row's bytes straight into the reader's buffer, at any alignment.
  std::vector<float> row(3);
  arrays.copy_row(3, std::as_writable_bytes(std::span(row)));
  EXPECT_THAT(row, ElementsAre(30.25F, -1.5F, 32.25F));
  arrays.copy_row(6, std::as_writable_bytes(std::span(row)));
  EXPECT_THAT(row, ElementsAre(60.25F, 61.25F, 62.25F));
  std::vector<float> short_row(2);
  EXPECT_THAT(message_of<stoke::UsageError>(
                  [&] { arrays.copy_row(0, std::as_writable_bytes(std::span(short_row))); }),
              HasSubstr("a row holds 12"));
  EXPECT_EQ(arrays.cache_stats().loads, 2U) << "each shard read once";
}

TEST(NpzFile, TellsWhichArraysAreReadInPlace) {
  const TempDir dir;
  const auto path =
      write_file(dir, "a.npz",
                 zip_file({{.name = "s.npy", .content = float_npy({3})},
                           {.name = "d.npy", .content = float_npy({5}), .deflate = true}}));
  const stoke::NpzFile npz(path);
  EXPECT_EQ(npz.path(), path);
  EXPECT_THAT(npz.arrays(), ElementsAre("s", "d"));
  EXPECT_TRUE(npz.in_place("s"));
  EXPECT_FALSE(npz.in_place("d"));
  EXPECT_EQ(npz.member("s"), "s.npy");
  EXPECT_TRUE(npz.load("d").aligned()) << "inflated into memory";
  stoke::testing::expect_numpy_array<float>(npz.load("d"), {5});
  EXPECT_THAT(message_of<stoke::InputError>([&] { (void)npz.in_place("w"); }),
              AllOf(HasSubstr("no array 'w'"), HasSubstr("its arrays: 's', 'd'")));
}

TEST(NpzFile, ReadsZip64Archives) {
  const TempDir dir;
  const auto path =
      write_file(dir, "a.npz",
                 zip_file({{.name = "s.npy", .content = float_npy({3})},
                           {.name = "d.npy", .content = float_npy({5}), .deflate = true}},
                          true));
  EXPECT_THAT(stoke::npz_members(path), ElementsAre("s", "d"));
  stoke::testing::expect_numpy_array<float>(stoke::load_npz(path, "s"), {3});
  stoke::testing::expect_numpy_array<float>(stoke::load_npz(path, "d"), {5});
}

TEST(NpzFile, ListsOnlyMembersThatAreNpyArrays) {
  const TempDir dir;
  const auto path = write_file(dir, "a.npz",
                               zip_file({{.name = "readme.txt", .content = {'h', 'i'}},
                                         {.name = "x.npy", .content = float_npy({1})},
                                         {.name = ".npy", .content = {}}}));
  EXPECT_THAT(stoke::npz_members(path), ElementsAre("x"));
}

TEST(NpzFile, InflatesADeflatedMemberOnlyAsFarAsItsHeaderDeclares) {
  const TempDir dir;
  // 16 MiB of zeros follow the 144 bytes the header declares; the directory agrees with it.
  FileBytes content = float_npy({4});
  content.resize(content.size() + (std::size_t{16} << 20U));
  const auto path = write_file(dir, "a.npz",
                               zip_file({{.name = "a.npy",
                                          .content = content,
                                          .deflate = true,
                                          .usize_delta = -(std::int64_t{16} << 20)}}));
  EXPECT_THAT(npz_refusal(path),
              AllOf(HasSubstr("member 'a.npy'"), HasSubstr("inflates to more than 144 bytes"),
                    HasSubstr("inflating stopped there")));
}

TEST(NpzFile, RefusesADeflatedMemberWhoseSizesOrCrcDisagree) {
  const TempDir dir;
  const auto longer = write_file(
      dir, "a.npz",
      zip_file({{.name = "a.npy", .content = float_npy({4}), .deflate = true, .usize_delta = 4}}));
  EXPECT_THAT(npz_refusal(longer), AllOf(HasSubstr("4 unexpected bytes after the data"),
                                         HasSubstr("ends at offset 148 of the member")));
  const auto crc = write_file(
      dir, "b.npz",
      zip_file({{.name = "a.npy", .content = float_npy({4}), .deflate = true, .wrong_crc = true}}));
  EXPECT_THAT(npz_refusal(crc), HasSubstr("CRC-32 mismatch"));
  const auto trailing = write_file(
      dir, "c.npz",
      zip_file(
          {{.name = "a.npy", .content = float_npy({4}), .deflate = true, .trailing = {1, 2, 3}}}));
  EXPECT_THAT(npz_refusal(trailing),
              HasSubstr("3 stored bytes follow the end of its deflate stream"));
}

TEST(NpzFile, RefusesCorruptOrTruncatedDeflateData) {
  const TempDir dir;
  FileBytes zip = zip_file({{.name = "a.npy", .content = float_npy({4}), .deflate = true}});
  zip[35] = 0xFF;  // the first block of the stream: reserved block type 3
  EXPECT_THAT(npz_refusal(write_file(dir, "a.npz", zip)),
              AllOf(HasSubstr("member 'a.npy'"), HasSubstr("corrupt deflate data at offset 36")));
  FileBytes cut = stoke::testing::raw_deflate(float_npy({4}));
  cut.resize(cut.size() - 4);
  const auto truncated =
      write_file(dir, "b.npz",
                 zip_file({{.name = "a.npy",
                            .content = cut,
                            .method = 8,
                            .usize_delta = 144 - static_cast<std::int64_t>(cut.size())}}));
  EXPECT_THAT(npz_refusal(truncated), HasSubstr("end before the deflate stream does (truncated)"));
}

TEST(NpzFile, RefusesEncryptedMembersAndOtherMethods) {
  const TempDir dir;
  const auto encrypted = write_file(
      dir, "a.npz", zip_file({{.name = "a.npy", .content = float_npy({1}), .flags = 1}}));
  EXPECT_THAT(npz_refusal(encrypted), AllOf(HasSubstr("member 'a.npy': encrypted"),
                                            HasSubstr("central directory record at offset 167")));
  const auto bzip2 = write_file(
      dir, "b.npz", zip_file({{.name = "a.npy", .content = float_npy({1}), .method = 12}}));
  EXPECT_THAT(npz_refusal(bzip2),
              AllOf(HasSubstr("compression method 12"), HasSubstr("stored (0) and deflate (8)")));
}

TEST(NpzFile, RefusesAMemberThatIsNotAValidNpyArray) {
  const TempDir dir;
  const auto path = write_file(
      dir, "a.npz", zip_file({{.name = "a.npy", .content = {'h', 'e', 'l', 'l', 'o', '!'}}}));
  EXPECT_THAT(npz_refusal(path),
              AllOf(HasSubstr("member 'a.npy'"), HasSubstr("wrong magic string 0x68656c6c6f21"),
                    HasSubstr("(data at offset 35): not an npy array"),
                    HasSubstr("at offset 0 of the member")));
  FileBytes big_endian = float_npy({2});
  big_endian[21] = '>';  // the descr '<f4' starts at offset 20
  const auto other = write_file(
      dir, "b.npz", zip_file({{.name = "a.npy", .content = big_endian, .deflate = true}}));
  EXPECT_THAT(npz_refusal(other), HasSubstr("big-endian dtype '>f4' at offset 20 of the member"));
}

TEST(NpzFile, RefusesFilesThatAreNotZipArchives) {
  const TempDir dir;
  EXPECT_THAT(npz_refusal(write_file(dir, "a.npz", {})), HasSubstr("not a zip file: 0 bytes"));
  EXPECT_THAT(npz_refusal(write_file(dir, "b.npz", float_npy({40}))),
              HasSubstr("no end of central directory record"));
  FileBytes zip = zip_file({{.name = "a.npy", .content = float_npy({1})}});
  zip.pop_back();
  EXPECT_THAT(npz_refusal(write_file(dir, "c.npz", zip)),
              HasSubstr("no end of central directory record"));
  EXPECT_THAT(message_of<stoke::InputError>([&] { (void)stoke::npz_members(dir / "d.npz"); }),
              AllOf(HasSubstr(dir.path().string()), HasSubstr("No such file")));
}

TEST(NpzFile, RefusesATruncatedDirectoryOrMember) {
  const TempDir dir;
  const FileBytes zip = zip_file({{.name = "a.npy", .content = float_npy({2})}});
  const FileBytes headless(zip.begin() + 10, zip.end());
  EXPECT_THAT(npz_refusal(write_file(dir, "a.npz", headless)),
              AllOf(HasSubstr("truncated: the central directory"), HasSubstr("at offset 171")));
  FileBytes member = zip;
  patch32(member, directory_offset(zip) + 20, 1000);  // the stored size
  patch32(member, directory_offset(zip) + 24, 1000);
  EXPECT_THAT(npz_refusal(write_file(dir, "b.npz", member)),
              AllOf(HasSubstr("member 'a.npy'"), HasSubstr("truncated: its 1000 stored bytes"),
                    HasSubstr("local header at offset 0")));
  FileBytes far = zip;
  patch32(far, directory_offset(zip) + 42, 500);  // the local header's offset
  EXPECT_THAT(npz_refusal(write_file(dir, "c.npz", far)),
              HasSubstr("no local header at offset 500"));
}

TEST(NpzFile, RefusesInconsistentRecords) {
  const TempDir dir;
  const auto renamed =
      write_file(dir, "a.npz",
                 zip_file({{.name = "a.npy", .content = float_npy({1}), .local_name = "b.npy"}}));
  EXPECT_THAT(npz_refusal(renamed), HasSubstr("its local header at offset 0 names 'b.npy'"));
  const auto sizes = write_file(
      dir, "b.npz", zip_file({{.name = "a.npy", .content = float_npy({1}), .usize_delta = 1}}));
  EXPECT_THAT(npz_refusal(sizes), HasSubstr("a stored member whose sizes differ"));
  FileBytes zip = zip_file({{.name = "a.npy", .content = float_npy({1})}});
  FileBytes no_extra = zip;
  patch32(no_extra, directory_offset(zip) + 20, 0xFFFFFFFFU);
  EXPECT_THAT(npz_refusal(write_file(dir, "c.npz", no_extra)),
              HasSubstr("holds no complete zip64 field"));
  FileBytes no_locator = zip;
  patch32(no_locator, zip.size() - 6, 0xFFFFFFFFU);
  EXPECT_THAT(npz_refusal(write_file(dir, "d.npz", no_locator)),
              HasSubstr("marks zip64 values but no zip64 locator precedes it"));
}

}  // namespace

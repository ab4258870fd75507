// Tests of the dataset sources: InMemoryDataset and MmapRecordDataset (mapped and read).
#include <unistd.h>

#include <cerrno>
#include <concepts>
#include <cstddef>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <ranges>
#include <span>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <range/v3/range/conversion.hpp>
#include <range/v3/view/iota.hpp>
#include <range/v3/view/transform.hpp>
#include <stoke/core/error.hpp>
#include <stoke/data/dataset.hpp>
#include <stoke/data/sources.hpp>

#include "stoke_test_files.hpp"

namespace {

using stoke::testing::message_of;
using stoke::testing::TempDir;

using testing::AllOf;
using testing::HasSubstr;

static_assert(stoke::Dataset<stoke::InMemoryDataset<int>>);
static_assert(stoke::Dataset<stoke::InMemoryDataset<std::string>>);
static_assert(stoke::Dataset<stoke::MmapRecordDataset>);
static_assert(std::is_same_v<decltype(std::declval<const stoke::InMemoryDataset<int>&>().get(0)),
                             const int&>);
static_assert(std::is_same_v<stoke::dataset_item_t<stoke::MmapRecordDataset>, stoke::RecordBytes>);
static_assert(std::ranges::contiguous_range<const stoke::RecordBytes&>);
static_assert(std::convertible_to<stoke::RecordBytes, std::span<const std::byte>>);

/// Bytes `0, 1, 2, ...` (mod 256), `count` of them.
std::vector<std::byte> counting_bytes(std::size_t count) {
  return ranges::views::iota(std::size_t{0}, count) |
         ranges::views::transform([](std::size_t i) { return static_cast<std::byte>(i % 256); }) |
         ranges::to<std::vector>();
}

// ---- InMemoryDataset ---------------------------------------------------------------------

TEST(InMemoryDataset, ReturnsEveryItemByIndex) {
  const stoke::InMemoryDataset<std::string> dataset({"a", "bb", "ccc"});
  ASSERT_EQ(dataset.size(), 3u);
  EXPECT_EQ(dataset.get(0), "a");
  EXPECT_EQ(dataset.get(1), "bb");
  EXPECT_EQ(dataset.get(2), "ccc");
  EXPECT_EQ(&dataset.get(2), &dataset.items()[2]);
}

TEST(InMemoryDataset, CopiesShareTheStorage) {
  const stoke::InMemoryDataset<int> dataset(std::vector<int>{7, 8, 9});
  const auto copy = dataset;
  EXPECT_EQ(&copy.get(0), &dataset.get(0));
  EXPECT_EQ(&copy.get(2), &dataset.get(2));
}

TEST(InMemoryDataset, GetManyAppendsTheRequestedItemsInOrder) {
  const stoke::InMemoryDataset<int> dataset(std::vector<int>{10, 11, 12, 13, 14});
  std::vector<int> out{-1};
  const std::vector<std::size_t> indices{4, 0, 2, 2};
  dataset.get_many(indices, out);
  EXPECT_EQ(out, (std::vector<int>{-1, 14, 10, 12, 12}));
}

TEST(InMemoryDataset, OutOfRangeIndexNamesTheIndexAndTheSizeAndGetManyAppendsNothing) {
  const stoke::InMemoryDataset<int> dataset(std::vector<int>{1, 2, 3});
  EXPECT_THAT(message_of<stoke::UsageError>([&] { (void)dataset.get(7); }),
              AllOf(HasSubstr("index 7"), HasSubstr("size 3")));
  std::vector<int> out;
  const std::vector<std::size_t> indices{0, 1, 3};
  EXPECT_THAT(message_of<stoke::UsageError>([&] { dataset.get_many(indices, out); }),
              AllOf(HasSubstr("index 3"), HasSubstr("size 3")));
  EXPECT_TRUE(out.empty());
}

// ---- MmapRecordDataset -------------------------------------------------------------------

TEST(MmapRecordDataset, ReadsFixedSizeRecordsInOrder) {
  const TempDir dir;
  const auto file = dir.write("records.bin", counting_bytes(5 * 8));
  const stoke::MmapRecordDataset dataset(file, 8);
  EXPECT_EQ(dataset.size(), 5u);
  EXPECT_EQ(dataset.record_size(), 8u);
  EXPECT_EQ(dataset.path(), file);
  for (std::size_t i = 0; i < dataset.size(); ++i) {
    const std::span<const std::byte> record = dataset.get(i);
    ASSERT_EQ(record.size(), 8u);
    for (std::size_t j = 0; j < record.size(); ++j) {
      EXPECT_EQ(std::to_integer<std::size_t>(record[j]), i * 8 + j) << "record " << i;
    }
  }
}

TEST(MmapRecordDataset, ReturnsSpansIntoTheMappingWithoutCopying) {
  const TempDir dir;
  const stoke::MmapRecordDataset dataset(dir.write("records.bin", counting_bytes(4 * 16)), 16);
  EXPECT_EQ(dataset.get(2).data(), dataset.get(2).data());
  EXPECT_EQ(dataset.get(2).data(), dataset.bytes().data() + 2 * 16);
  EXPECT_EQ(dataset.get(3).data(), dataset.get(0).data() + 3 * 16);
}

TEST(MmapRecordDataset, CopiesShareTheMappingAndKeepItAlive) {
  const TempDir dir;
  const auto file = dir.write("records.bin", counting_bytes(3 * 4));
  std::optional<stoke::MmapRecordDataset> original(std::in_place, file, 4);
  const stoke::MmapRecordDataset copy = *original;
  const std::byte* address = original->get(1).data();
  EXPECT_EQ(copy.get(1).data(), address);
  original.reset();  // the copy still holds the mapping
  EXPECT_EQ(copy.get(1).data(), address);
  EXPECT_EQ(std::to_integer<int>(copy.get(2)[3]), 11);
}

TEST(MmapRecordDataset, RejectsAMissingFileNamingThePathAndTheReason) {
  const TempDir dir;
  const auto missing = dir.path() / "missing.bin";
  EXPECT_THAT(message_of<stoke::InputError>([&] { (void)stoke::MmapRecordDataset(missing, 4); }),
              AllOf(HasSubstr(missing.string()), HasSubstr(std::strerror(ENOENT))));
}

TEST(MmapRecordDataset, RejectsADirectory) {
  const TempDir dir;
  EXPECT_THAT(message_of<stoke::InputError>([&] { (void)stoke::MmapRecordDataset(dir.path(), 4); }),
              AllOf(HasSubstr(dir.path().string()), HasSubstr("not a regular file")));
}

TEST(MmapRecordDataset, RejectsAnEmptyFile) {
  const TempDir dir;
  const auto file = dir.write("empty.bin", {});
  EXPECT_THAT(message_of<stoke::InputError>([&] { (void)stoke::MmapRecordDataset(file, 4); }),
              AllOf(HasSubstr(file.string()), HasSubstr("empty"), HasSubstr("0 bytes")));
}

TEST(MmapRecordDataset, RejectsARecordSizeOfZero) {
  const TempDir dir;
  const auto file = dir.write("records.bin", counting_bytes(8));
  EXPECT_THAT(message_of<stoke::InputError>([&] { (void)stoke::MmapRecordDataset(file, 0); }),
              AllOf(HasSubstr(file.string()), HasSubstr("record size 0")));
}

TEST(MmapRecordDataset, RejectsFileWhoseSizeIsNotAMultipleOfTheRecordSize) {
  const TempDir dir;
  const auto file = dir.write("records.bin", counting_bytes(1000));
  EXPECT_THAT(message_of<stoke::InputError>([&] { (void)stoke::MmapRecordDataset(file, 64); }),
              AllOf(HasSubstr(file.string()), HasSubstr("1000 bytes"), HasSubstr("record size 64"),
                    HasSubstr("remainder 40"), HasSubstr("offset 960")));
}

TEST(MmapRecordDataset, OutOfRangeGetNamesTheIndexAndTheSize) {
  const TempDir dir;
  const stoke::MmapRecordDataset dataset(dir.write("records.bin", counting_bytes(6)), 2);
  EXPECT_THAT(message_of<stoke::UsageError>([&] { (void)dataset.get(3); }),
              AllOf(HasSubstr("index 3"), HasSubstr("size 3")));
}

// ---- MmapRecordDataset with FileAccess::read --------------------------------------------

/// The bytes of `record`.
std::vector<std::byte> bytes_of(const stoke::RecordBytes& record) {
  return {record.begin(), record.end()};
}

TEST(MmapRecordDatasetRead, GivesTheSameRecordsAsTheMapping) {
  const TempDir dir;
  const auto file = dir.write("records.bin", counting_bytes(300 * 7));
  const stoke::MmapRecordDataset mapped(file, 7);
  const stoke::MmapRecordDataset read(file, 7, stoke::FileAccess::read);
  EXPECT_EQ(mapped.access(), stoke::FileAccess::map);
  EXPECT_EQ(read.access(), stoke::FileAccess::read);
  ASSERT_EQ(read.size(), 300u);
  EXPECT_EQ(read.record_size(), 7u);
  EXPECT_EQ(read.path(), file);
  for (std::size_t i = 0; i < read.size(); ++i) {
    ASSERT_EQ(bytes_of(read.get(i)), bytes_of(mapped.get(i))) << "record " << i;
  }
  EXPECT_EQ(std::to_integer<int>(read.get(2)[3]), 17);
}

TEST(MmapRecordDatasetRead, RecordsOwnTheirBytesAndCopiesShareTheFile) {
  const TempDir dir;
  const auto file = dir.write("records.bin", counting_bytes(3 * 4));
  std::optional<stoke::MmapRecordDataset> original(std::in_place, file, 4, stoke::FileAccess::read);
  const stoke::RecordBytes record = original->get(1);
  EXPECT_NE(original->get(1).data(), record.data());  // each get reads anew
  const stoke::MmapRecordDataset copy = *original;
  original.reset();  // the copy still holds the file open, the record its bytes
  EXPECT_EQ(bytes_of(record), bytes_of(copy.get(1)));
  const std::span<const std::byte> view = copy.get(2);
  EXPECT_EQ(view.size(), 4u);
  EXPECT_THAT(message_of<stoke::UsageError>([&] { (void)copy.bytes(); }),
              AllOf(HasSubstr(file.string()), HasSubstr("FileAccess::read, not mapped")));
}

TEST(MmapRecordDatasetRead, AFileTruncatedAfterOpeningGivesAnInputErrorNamingTheFileAndOffset) {
  const TempDir dir;
  const auto file = dir.write("records.bin", counting_bytes(8 * 16));
  const stoke::MmapRecordDataset dataset(file, 16, stoke::FileAccess::read);
  const stoke::RecordBytes before = dataset.get(5);
  std::filesystem::resize_file(file, 40);  // records 0 and 1 whole, 8 bytes of record 2
  ASSERT_EQ(dataset.size(), 8u);           // as when it was opened
  // Records before the cut still read.
  EXPECT_EQ(bytes_of(dataset.get(0)), counting_bytes(16));
  EXPECT_EQ(std::to_integer<int>(dataset.get(1)[15]), 31);
  // A record cut in two, and one wholly past the new end.
  EXPECT_THAT(
      message_of<stoke::InputError>([&] { (void)dataset.get(2); }),
      AllOf(HasSubstr("short read of '" + file.string() + "' at byte offset 32"),
            HasSubstr("16 bytes wanted, 8 read"), HasSubstr("it now ends at byte offset 40"),
            HasSubstr("it held 128 bytes when opened")));
  EXPECT_THAT(
      message_of<stoke::InputError>([&] { (void)dataset.get(6); }),
      AllOf(HasSubstr("short read of '" + file.string() + "' at byte offset 96"),
            HasSubstr("16 bytes wanted, 0 read"), HasSubstr("it now ends at byte offset 40")));
  // A record read before the cut keeps its bytes.
  EXPECT_EQ(std::to_integer<int>(before[0]), 80);
}

TEST(MmapRecordDatasetRead, RefusesWhatTheMappingRefuses) {
  const TempDir dir;
  const auto missing = dir.path() / "missing.bin";
  const auto read = stoke::FileAccess::read;
  EXPECT_THAT(
      message_of<stoke::InputError>([&] { (void)stoke::MmapRecordDataset(missing, 4, read); }),
      AllOf(HasSubstr(missing.string()), HasSubstr(std::strerror(ENOENT))));
  EXPECT_THAT(
      message_of<stoke::InputError>([&] { (void)stoke::MmapRecordDataset(dir.path(), 4, read); }),
      AllOf(HasSubstr("cannot read '" + dir.path().string()), HasSubstr("not a regular file")));
  const auto empty = dir.write("empty.bin", {});
  EXPECT_THAT(
      message_of<stoke::InputError>([&] { (void)stoke::MmapRecordDataset(empty, 4, read); }),
      AllOf(HasSubstr(empty.string()), HasSubstr("empty"), HasSubstr("0 bytes")));
  const auto odd = dir.write("odd.bin", counting_bytes(1000));
  EXPECT_THAT(message_of<stoke::InputError>([&] { (void)stoke::MmapRecordDataset(odd, 64, read); }),
              AllOf(HasSubstr(odd.string()), HasSubstr("remainder 40"), HasSubstr("offset 960")));
  const stoke::MmapRecordDataset dataset(dir.write("records.bin", counting_bytes(6)), 2, read);
  EXPECT_THAT(message_of<stoke::UsageError>([&] { (void)dataset.get(3); }),
              AllOf(HasSubstr("index 3"), HasSubstr("size 3")));
}

}  // namespace

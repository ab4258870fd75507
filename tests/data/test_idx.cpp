// Tests of the IDX reader (MNIST / Fashion-MNIST files) and IdxClassificationDataset.
#include <sys/resource.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <iterator>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stoke/core/error.hpp>
#include <stoke/cpu/backend.hpp>
#include <stoke/cpu/image_batcher.hpp>
#include <stoke/data/batcher.hpp>
#include <stoke/data/dataset.hpp>
#include <stoke/data/sources/idx.hpp>

#include "stoke_test_files.hpp"

namespace {

using stoke::testing::message_of;
using stoke::testing::TempDir;

using testing::AllOf;
using testing::HasSubstr;
using Bytes = std::vector<std::uint8_t>;

static_assert(stoke::Dataset<stoke::IdxClassificationDataset>);
static_assert(
    std::is_same_v<stoke::dataset_item_t<stoke::IdxClassificationDataset>, stoke::LabeledImage>);
static_assert(stoke::Batcher<stoke::cpu::ImageBatcher, stoke::cpu::Backend, stoke::LabeledImage>);

/// An IDX file: magic (0, 0, type, rank), big-endian dims, then `data`.
Bytes idx_bytes(std::initializer_list<std::uint32_t> dims, const Bytes& data,
                std::uint8_t type = 0x08) {
  Bytes out{0, 0, type, static_cast<std::uint8_t>(dims.size())};
  for (const std::uint32_t d : dims) {
    for (int shift = 24; shift >= 0; shift -= 8)
      out.push_back(static_cast<std::uint8_t>(d >> shift));
  }
  out.insert(out.end(), data.begin(), data.end());
  return out;
}

/// `count` bytes 0, 1, 2, ... (modulo 256).
Bytes iota_bytes(std::size_t count, std::uint8_t first = 0) {
  Bytes out(count);
  for (std::size_t i = 0; i < count; ++i) out[i] = static_cast<std::uint8_t>(first + i);
  return out;
}

void write_plain(const std::filesystem::path& path, const Bytes& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(bytes.data()),
            static_cast<std::streamsize>(bytes.size()));
  ASSERT_TRUE(out.good()) << path;
}

void write_gzip(const std::filesystem::path& path, const Bytes& bytes) {
  gzFile file = gzopen(path.c_str(), "wb");
  ASSERT_NE(file, nullptr) << path;
  if (!bytes.empty()) {
    ASSERT_EQ(gzwrite(file, bytes.data(), static_cast<unsigned>(bytes.size())),
              static_cast<int>(bytes.size()));
  }
  ASSERT_EQ(gzclose(file), Z_OK);
}

Bytes read_plain(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

/// 3 images of 2x3 pixels (values 10..27) and their labels 7, 0, 255.
struct SmallSet {
  Bytes images = idx_bytes({3, 2, 3}, iota_bytes(18, 10));
  Bytes labels = idx_bytes({3}, {7, 0, 255});
};

TEST(IdxRead, ReadsTheDimensionsAndDataOfAPlainFile) {
  TempDir dir;
  write_plain(dir / "a.idx", idx_bytes({2, 3, 4}, iota_bytes(24)));
  const stoke::IdxArray array = stoke::read_idx(dir / "a.idx");
  EXPECT_EQ(array.dims(), (std::vector<std::size_t>{2, 3, 4}));
  EXPECT_EQ(Bytes(array.data().begin(), array.data().end()), iota_bytes(24));
  EXPECT_EQ(array.data_offset(), 16U);
  EXPECT_FALSE(array.compressed());
  EXPECT_EQ(array.path(), dir / "a.idx");
}

TEST(IdxRead, DecompressesAGzipFile) {
  TempDir dir;
  const Bytes data = iota_bytes(70000);
  write_gzip(dir / "a.idx.gz", idx_bytes({70000}, data));
  const stoke::IdxArray array = stoke::read_idx(dir / "a.idx.gz");
  EXPECT_TRUE(array.compressed());
  EXPECT_EQ(array.dims(), (std::vector<std::size_t>{70000}));
  EXPECT_EQ(Bytes(array.data().begin(), array.data().end()), data);
}

TEST(IdxRead, ReadsBigEndianDimensionsAboveOneByte) {
  TempDir dir;
  write_plain(dir / "a.idx", idx_bytes({1, 300}, iota_bytes(300)));
  EXPECT_EQ(stoke::read_idx(dir / "a.idx").dims(), (std::vector<std::size_t>{1, 300}));
}

TEST(IdxRead, JoinsConcatenatedGzipMembers) {
  TempDir dir;
  const Bytes whole = idx_bytes({6}, {1, 2, 3, 4, 5, 6});
  write_gzip(dir / "first.gz", Bytes(whole.begin(), whole.begin() + 9));
  write_gzip(dir / "second.gz", Bytes(whole.begin() + 9, whole.end()));
  Bytes joined = read_plain(dir / "first.gz");
  const Bytes second = read_plain(dir / "second.gz");
  joined.insert(joined.end(), second.begin(), second.end());
  write_plain(dir / "joined.gz", joined);
  const auto array = stoke::read_idx(dir / "joined.gz");
  EXPECT_EQ(Bytes(array.data().begin(), array.data().end()), (Bytes{1, 2, 3, 4, 5, 6}));
}

TEST(IdxRead, CopiesShareTheBytes) {
  TempDir dir;
  write_plain(dir / "a.idx", idx_bytes({4}, {1, 2, 3, 4}));
  const auto array = stoke::read_idx(dir / "a.idx");
  const auto copy = array;  // NOLINT(performance-unnecessary-copy-initialization)
  EXPECT_EQ(copy.data().data(), array.data().data());
}

TEST(IdxDataset, PairsEveryImageWithItsLabel) {
  TempDir dir;
  const SmallSet set;
  write_plain(dir / "images", set.images);
  write_plain(dir / "labels", set.labels);
  const stoke::IdxClassificationDataset dataset(dir / "images", dir / "labels");
  ASSERT_EQ(dataset.size(), 3U);
  EXPECT_EQ(dataset.image_shape(), (std::array<std::size_t, 2>{2, 3}));
  const std::array<std::uint32_t, 3> labels{7, 0, 255};
  for (std::size_t i = 0; i < 3; ++i) {
    const stoke::LabeledImage item = dataset.get(i);
    EXPECT_EQ(Bytes(item.pixels.begin(), item.pixels.end()),
              iota_bytes(6, static_cast<std::uint8_t>(10 + 6 * i)))
        << "image " << i;
    EXPECT_EQ(item.label, labels[i]) << "image " << i;
  }
}

TEST(IdxDataset, ReadsGzipCompressedFiles) {
  TempDir dir;
  const SmallSet set;
  write_gzip(dir / "images.gz", set.images);
  write_gzip(dir / "labels.gz", set.labels);
  const stoke::IdxClassificationDataset dataset(dir / "images.gz", dir / "labels.gz");
  ASSERT_EQ(dataset.size(), 3U);
  EXPECT_EQ(dataset.get(2).label, 255U);
  EXPECT_EQ(dataset.get(2).pixels[5], 27U);
}

TEST(IdxDataset, GetPointsIntoTheSharedBufferWithoutCopying) {
  TempDir dir;
  const SmallSet set;
  write_plain(dir / "images", set.images);
  write_plain(dir / "labels", set.labels);
  const stoke::IdxClassificationDataset dataset(dir / "images", dir / "labels");
  const auto copy = dataset;  // NOLINT(performance-unnecessary-copy-initialization)
  EXPECT_EQ(dataset.get(1).pixels.data(), dataset.images().data().data() + 6);
  EXPECT_EQ(dataset.get(1).pixels.data(), dataset.get(1).pixels.data());
  EXPECT_EQ(copy.get(2).pixels.data(), dataset.get(2).pixels.data());
}

TEST(IdxDataset, GetOutOfRangeThrowsNamingIndexAndSize) {
  TempDir dir;
  const SmallSet set;
  write_plain(dir / "images", set.images);
  write_plain(dir / "labels", set.labels);
  const stoke::IdxClassificationDataset dataset(dir / "images", dir / "labels");
  const auto message = message_of<stoke::UsageError>([&] { (void)dataset.get(3); });
  EXPECT_THAT(message, AllOf(HasSubstr("index 3"), HasSubstr("size 3")));
}

TEST(IdxErrors, MissingFileNamesThePathAndTheReason) {
  TempDir dir;
  const auto message =
      message_of<stoke::InputError>([&] { (void)stoke::read_idx(dir / "missing.idx"); });
  EXPECT_THAT(message, AllOf(HasSubstr((dir / "missing.idx").string()), HasSubstr("offset 0"),
                             HasSubstr("No such file")));
}

TEST(IdxErrors, WrongMagicNumberSaysWhatWasFoundAtOffset0) {
  TempDir dir;
  write_plain(dir / "a.idx", {0x50, 0x4b, 0x03, 0x04, 0, 0, 0, 0});
  const auto message = message_of<stoke::InputError>([&] { (void)stoke::read_idx(dir / "a.idx"); });
  EXPECT_THAT(message, AllOf(HasSubstr((dir / "a.idx").string()), HasSubstr("magic number"),
                             HasSubstr("0x504b0304"), HasSubstr("offset 0")));
}

TEST(IdxErrors, WrongMagicInsideAGzipFileNamesTheDecompressedOffset) {
  TempDir dir;
  write_gzip(dir / "a.gz", {1, 2, 3, 4, 5});
  const auto message = message_of<stoke::InputError>([&] { (void)stoke::read_idx(dir / "a.gz"); });
  EXPECT_THAT(message, AllOf(HasSubstr((dir / "a.gz").string()), HasSubstr("0x01020304"),
                             HasSubstr("offset 0 of the decompressed data")));
}

TEST(IdxErrors, UnsupportedTypeByteIsRefusedAtOffset2) {
  TempDir dir;
  write_plain(dir / "a.idx", idx_bytes({1}, {0, 0, 0, 0}, 0x0D));
  const auto message = message_of<stoke::InputError>([&] { (void)stoke::read_idx(dir / "a.idx"); });
  EXPECT_THAT(message, AllOf(HasSubstr((dir / "a.idx").string()), HasSubstr("0x0d"),
                             HasSubstr("float32"), HasSubstr("offset 2")));
}

TEST(IdxErrors, ImagesWithTwoDimensionsAreRefusedAtOffset3) {
  TempDir dir;
  write_plain(dir / "images", idx_bytes({3, 6}, iota_bytes(18)));
  write_plain(dir / "labels", idx_bytes({3}, {1, 2, 3}));
  const auto message = message_of<stoke::InputError>(
      [&] { stoke::IdxClassificationDataset(dir / "images", dir / "labels"); });
  EXPECT_THAT(message, AllOf(HasSubstr((dir / "images").string()), HasSubstr("2 dimensions"),
                             HasSubstr("offset 3"), HasSubstr("expected 3")));
}

TEST(IdxErrors, LabelsWithTwoDimensionsAreRefusedAtOffset3) {
  TempDir dir;
  const SmallSet set;
  write_plain(dir / "images", set.images);
  write_plain(dir / "labels", idx_bytes({3, 1}, {1, 2, 3}));
  const auto message = message_of<stoke::InputError>(
      [&] { stoke::IdxClassificationDataset(dir / "images", dir / "labels"); });
  EXPECT_THAT(message, AllOf(HasSubstr((dir / "labels").string()), HasSubstr("2 dimensions"),
                             HasSubstr("offset 3"), HasSubstr("expected 1")));
}

TEST(IdxErrors, TruncatedDataNamesExpectedAndPresentSizesAndWhereItEnds) {
  TempDir dir;
  Bytes bytes = idx_bytes({3, 2, 3}, iota_bytes(18));
  bytes.resize(bytes.size() - 5);  // 13 of 18 data bytes; the file ends at offset 29
  write_plain(dir / "a.idx", bytes);
  const auto message = message_of<stoke::InputError>([&] { (void)stoke::read_idx(dir / "a.idx"); });
  EXPECT_THAT(message, AllOf(HasSubstr((dir / "a.idx").string()), HasSubstr("truncated"),
                             HasSubstr("declares 18 data bytes from offset 16"),
                             HasSubstr("only 13 are present"), HasSubstr("ends at offset 29")));
}

TEST(IdxErrors, TruncatedGzipContentNamesTheDecompressedOffset) {
  TempDir dir;
  Bytes bytes = idx_bytes({100}, iota_bytes(100));
  bytes.resize(50);
  write_gzip(dir / "a.gz", bytes);
  const auto message = message_of<stoke::InputError>([&] { (void)stoke::read_idx(dir / "a.gz"); });
  EXPECT_THAT(message, AllOf(HasSubstr((dir / "a.gz").string()), HasSubstr("only 42 are present"),
                             HasSubstr("ends at offset 50 of the decompressed data")));
}

TEST(IdxErrors, TruncatedHeaderSaysWhereTheFileEnds) {
  TempDir dir;
  write_plain(dir / "a.idx", {0, 0, 8, 3, 0, 0, 0, 1, 0});
  const auto message = message_of<stoke::InputError>([&] { (void)stoke::read_idx(dir / "a.idx"); });
  EXPECT_THAT(message, AllOf(HasSubstr((dir / "a.idx").string()), HasSubstr("truncated header"),
                             HasSubstr("16 header bytes"), HasSubstr("ends at offset 9")));
}

TEST(IdxErrors, FileShorterThanTheMagicNumberIsTruncated) {
  TempDir dir;
  write_plain(dir / "a.idx", {0, 0});
  const auto message = message_of<stoke::InputError>([&] { (void)stoke::read_idx(dir / "a.idx"); });
  EXPECT_THAT(message, AllOf(HasSubstr((dir / "a.idx").string()), HasSubstr("truncated header"),
                             HasSubstr("ends at offset 2")));
}

TEST(IdxErrors, BytesAfterTheDataAreRefused) {
  TempDir dir;
  Bytes bytes = idx_bytes({2}, {1, 2});
  bytes.push_back(3);
  write_plain(dir / "a.idx", bytes);
  const auto message = message_of<stoke::InputError>([&] { (void)stoke::read_idx(dir / "a.idx"); });
  EXPECT_THAT(message, AllOf(HasSubstr((dir / "a.idx").string()), HasSubstr("1 unexpected bytes"),
                             HasSubstr("ending at offset 10")));
}

TEST(IdxErrors, CorruptGzipStreamNamesTheCompressedOffset) {
  TempDir dir;
  write_gzip(dir / "good.gz", idx_bytes({1000}, iota_bytes(1000)));
  Bytes bytes = read_plain(dir / "good.gz");
  ASSERT_GT(bytes.size(), 30U);
  bytes[bytes.size() - 6] ^= 0xFF;  // inside the CRC-32 of the trailer
  write_plain(dir / "bad.gz", bytes);
  const auto message =
      message_of<stoke::InputError>([&] { (void)stoke::read_idx(dir / "bad.gz"); });
  EXPECT_THAT(message,
              AllOf(HasSubstr((dir / "bad.gz").string()), HasSubstr("corrupt gzip"),
                    HasSubstr("compressed byte offset"), HasSubstr("incorrect data check")));
}

TEST(IdxErrors, CorruptDeflateDataIsRefused) {
  TempDir dir;
  Bytes bytes(40, 0xFF);  // a gzip header, then a deflate block of the reserved type 3
  const Bytes header{0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3};
  std::copy(header.begin(), header.end(), bytes.begin());
  write_plain(dir / "bad.gz", bytes);
  const auto message =
      message_of<stoke::InputError>([&] { (void)stoke::read_idx(dir / "bad.gz"); });
  EXPECT_THAT(message, AllOf(HasSubstr((dir / "bad.gz").string()), HasSubstr("corrupt gzip"),
                             HasSubstr("compressed byte offset")));
}

TEST(IdxErrors, TruncatedGzipStreamIsRefused) {
  TempDir dir;
  write_gzip(dir / "good.gz", idx_bytes({1000}, iota_bytes(1000)));
  Bytes bytes = read_plain(dir / "good.gz");
  bytes.resize(bytes.size() - 10);
  write_plain(dir / "cut.gz", bytes);
  const auto message =
      message_of<stoke::InputError>([&] { (void)stoke::read_idx(dir / "cut.gz"); });
  EXPECT_THAT(message, AllOf(HasSubstr((dir / "cut.gz").string()), HasSubstr("corrupt gzip"),
                             HasSubstr("compressed byte offset " + std::to_string(bytes.size())),
                             HasSubstr("truncated")));
}

/// Caps this process's address space at what it maps now plus `extra` bytes, for its
/// lifetime: a reader that allocates more fails with `std::bad_alloc` instead of an error of
/// its own. (Each test runs in a process of its own under ctest.)
class AddressSpaceLimit {
 public:
  explicit AddressSpaceLimit(std::size_t extra) {
    ::getrlimit(RLIMIT_AS, &saved_);
    std::ifstream statm("/proc/self/statm");
    std::size_t pages = 0;
    statm >> pages;
    const auto mapped = static_cast<rlim_t>(pages) * static_cast<rlim_t>(::sysconf(_SC_PAGESIZE));
    const rlimit limit{mapped + extra, saved_.rlim_max};
    ::setrlimit(RLIMIT_AS, &limit);
  }
  AddressSpaceLimit(const AddressSpaceLimit&) = delete;
  AddressSpaceLimit& operator=(const AddressSpaceLimit&) = delete;
  ~AddressSpaceLimit() { ::setrlimit(RLIMIT_AS, &saved_); }

 private:
  rlimit saved_{};
};

/// A gzip file of `head` followed by `zeros` zero bytes, written in pieces.
void write_gzip_with_zeros(const std::filesystem::path& path, const Bytes& head,
                           std::size_t zeros) {
  gzFile file = gzopen(path.c_str(), "wb");
  ASSERT_NE(file, nullptr) << path;
  ASSERT_EQ(gzwrite(file, head.data(), static_cast<unsigned>(head.size())),
            static_cast<int>(head.size()));
  const Bytes piece(std::size_t{1} << 20U, 0);
  for (std::size_t left = zeros; left > 0;) {
    const std::size_t n = std::min(left, piece.size());
    ASSERT_EQ(gzwrite(file, piece.data(), static_cast<unsigned>(n)), static_cast<int>(n));
    left -= n;
  }
  ASSERT_EQ(gzclose(file), Z_OK);
}

TEST(IdxErrors, AGzipFileIsInflatedOnlyAsFarAsItsHeaderDeclares) {
  TempDir dir;
  // A 9-byte IDX file (1 data byte) followed by 256 MiB of zeros: about 250 KiB compressed.
  write_gzip_with_zeros(dir / "bomb.gz", idx_bytes({1}, {7}), std::size_t{256} << 20U);
  std::string message;
  {
    const AddressSpaceLimit limit(std::size_t{64} << 20U);
    message = message_of<stoke::InputError>([&] { (void)stoke::read_idx(dir / "bomb.gz"); });
  }
  EXPECT_THAT(message, AllOf(HasSubstr((dir / "bomb.gz").string()), HasSubstr("unexpected bytes"),
                             HasSubstr("ending at offset 9 of the decompressed data"),
                             HasSubstr("decompression stopped there")));
}

TEST(IdxErrors, AForgedSizeInTheGzipTrailerReservesNothingAndIsRefused) {
  TempDir dir;
  write_gzip(dir / "good.gz", idx_bytes({1000}, iota_bytes(1000)));
  Bytes bytes = read_plain(dir / "good.gz");
  std::fill(bytes.end() - 4, bytes.end(), std::uint8_t{0xFF});  // "4 GiB - 1 decompressed"
  write_plain(dir / "forged.gz", bytes);
  std::string message;
  {
    const AddressSpaceLimit limit(std::size_t{64} << 20U);
    message = message_of<stoke::InputError>([&] { (void)stoke::read_idx(dir / "forged.gz"); });
  }
  EXPECT_THAT(message, AllOf(HasSubstr((dir / "forged.gz").string()), HasSubstr("corrupt gzip"),
                             HasSubstr("incorrect length check")));
}

TEST(IdxErrors, BytesAfterTheLastGzipMemberAreRefused) {
  TempDir dir;
  write_gzip(dir / "good.gz", idx_bytes({4}, {1, 2, 3, 4}));
  Bytes bytes = read_plain(dir / "good.gz");
  const std::size_t end = bytes.size();
  for (const char c : std::string("junk!")) bytes.push_back(static_cast<std::uint8_t>(c));
  write_plain(dir / "junk.gz", bytes);
  const auto message =
      message_of<stoke::InputError>([&] { (void)stoke::read_idx(dir / "junk.gz"); });
  EXPECT_THAT(message, AllOf(HasSubstr((dir / "junk.gz").string()),
                             HasSubstr("compressed byte offset " + std::to_string(end)),
                             HasSubstr("5 bytes follow the last gzip member")));
}

TEST(IdxRead, AZeroDimensionMakesAnEmptyArrayWhateverTheOthersAre) {
  TempDir dir;
  write_plain(dir / "empty.idx", idx_bytes({0xFFFFFFFFu, 0xFFFFFFFFu, 0xFFFFFFFFu, 0}, {}));
  const stoke::IdxArray array = stoke::read_idx(dir / "empty.idx");
  EXPECT_EQ(array.dims(), (std::vector<std::size_t>{0xFFFFFFFFu, 0xFFFFFFFFu, 0xFFFFFFFFu, 0}));
  EXPECT_TRUE(array.data().empty());
}

TEST(IdxErrors, DimensionsBeyondTheAddressSpaceAreRefused) {
  TempDir dir;
  write_plain(dir / "huge.idx", idx_bytes({0xFFFFFFFFu, 0xFFFFFFFFu, 0xFFFFFFFFu}, {}));
  const auto message =
      message_of<stoke::InputError>([&] { (void)stoke::read_idx(dir / "huge.idx"); });
  EXPECT_THAT(message, AllOf(HasSubstr((dir / "huge.idx").string()),
                             HasSubstr("dimensions 4294967295x4294967295x4294967295 at offset 4"),
                             HasSubstr("more bytes than the address space holds")));
}

TEST(IdxErrors, AnEndlessStreamIsRefusedNamingIt) {
  const auto message = message_of<stoke::InputError>([] { (void)stoke::read_idx("/dev/zero"); });
  EXPECT_THAT(message, AllOf(HasSubstr("'/dev/zero'"), HasSubstr("not a regular file")));
}

TEST(IdxErrors, CountMismatchNamesBothFilesAndBothCounts) {
  TempDir dir;
  write_plain(dir / "images", idx_bytes({3, 1, 2}, iota_bytes(6)));
  write_plain(dir / "labels", idx_bytes({2}, {1, 2}));
  const auto message = message_of<stoke::InputError>(
      [&] { stoke::IdxClassificationDataset(dir / "images", dir / "labels"); });
  EXPECT_THAT(message, AllOf(HasSubstr((dir / "images").string()), HasSubstr("3 images"),
                             HasSubstr((dir / "labels").string()), HasSubstr("2 labels"),
                             HasSubstr("offset 4")));
}

TEST(ImageBatcher, NormalisesPixelsAndKeepsLabels) {
  const Bytes a{0, 255, 51};
  const Bytes b{102, 0, 255};
  const stoke::cpu::ImageBatcher batcher{.mean = 0.5F, .std = 0.25F};
  const auto batch = batcher.batch({{a, 3}, {b, 9}}, stoke::cpu::Device{1});
  EXPECT_EQ(batch.inputs.shape(), (std::vector<std::size_t>{2, 3}));
  EXPECT_EQ(batch.inputs.device(), stoke::cpu::Device{1});
  const std::vector<float> expected{-2.0F, 2.0F, -1.2F, -0.4F, -2.0F, 2.0F};
  for (std::size_t i = 0; i < expected.size(); ++i) {
    EXPECT_NEAR(batch.inputs.values()[i], expected[i], 1e-5F) << "element " << i;
  }
  EXPECT_EQ(batch.labels, (std::vector<std::int32_t>{3, 9}));
}

TEST(ImageBatcher, DefaultScalesBytesToTheUnitInterval) {
  const Bytes a{0, 255};
  const auto batch = stoke::cpu::ImageBatcher{}.batch({{a, 0}}, {});
  EXPECT_EQ(batch.inputs.values()[0], 0.0F);
  EXPECT_EQ(batch.inputs.values()[1], 1.0F);
}

TEST(ImageBatcher, RefusesImagesOfDifferentSizesNamingTheItem) {
  const Bytes a{1, 2, 3};
  const Bytes b{1, 2};
  const auto message = message_of<stoke::InputError>(
      [&] { (void)stoke::cpu::ImageBatcher{}.batch({{a, 0}, {a, 1}, {b, 2}}, {}); });
  EXPECT_THAT(message, AllOf(HasSubstr("item 2"), HasSubstr("2 pixels"), HasSubstr("3")));
}

TEST(ImageBatcher, BatchesTheImagesOfAnIdxDataset) {
  TempDir dir;
  const SmallSet set;
  write_plain(dir / "images", set.images);
  write_plain(dir / "labels", set.labels);
  const stoke::IdxClassificationDataset dataset(dir / "images", dir / "labels");
  const auto batch = stoke::cpu::ImageBatcher{}.batch({dataset.get(2), dataset.get(0)}, {});
  EXPECT_EQ(batch.inputs.shape(), (std::vector<std::size_t>{2, 6}));
  EXPECT_FLOAT_EQ(batch.inputs.row(0)[0], 22.0F / 255.0F);
  EXPECT_EQ(batch.labels, (std::vector<std::int32_t>{255, 7}));
}

TEST(FashionMnist, TrainingSetHas60000ImagesOf28x28WithBalancedLabels) {
  const std::filesystem::path root = "/usr/share/datasets/fashion-mnist";
  const auto images = root / "train-images-idx3-ubyte.gz";
  const auto labels = root / "train-labels-idx1-ubyte.gz";
  if (!std::filesystem::exists(images) || !std::filesystem::exists(labels)) {
    GTEST_SKIP() << "Fashion-MNIST is not installed: " << images << " or " << labels
                 << " is absent";
  }
  const stoke::IdxClassificationDataset dataset(images, labels);
  ASSERT_EQ(dataset.size(), 60000U);
  EXPECT_EQ(dataset.image_shape(), (std::array<std::size_t, 2>{28, 28}));
  std::array<std::size_t, 10> per_class{};
  for (std::size_t i = 0; i < dataset.size(); ++i) {
    const auto item = dataset.get(i);
    ASSERT_EQ(item.pixels.size(), 784U);
    ASSERT_LT(item.label, 10U) << "image " << i;
    ++per_class[item.label];
  }
  for (std::size_t label = 0; label < 10; ++label) {
    EXPECT_EQ(per_class[label], 6000U) << "class " << label;
  }
}

}  // namespace

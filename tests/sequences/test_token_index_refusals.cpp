// A corrupt .idx (or a .bin that does not belong to it) is refused with an InputError naming
// the file and the byte offset of what is wrong: every corruption case by hand, and every byte
// of a small index changed to several values, which must open as a store whose every sequence
// lies inside its .bin, or be refused.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include <stoke/core/error.hpp>
#include <stoke/sequences/sharded_token_store.hpp>
#include <stoke/sequences/token_store.hpp>

#include "stoke_test_files.hpp"
#include "token_store_files.hpp"

namespace {

using stoke::testing::message_of;
using stoke::testing::put;
using stoke::testing::read_bytes;
using stoke::testing::TempDir;
using stoke::testing::write_bytes;
using ::testing::HasSubstr;

/// A store of 4 int32 sequences (3, 0, 5 and 2 tokens) in 2 documents, whose files a test then
/// spoils; the offsets of its index's fields.
class SpoiltIndex : public ::testing::Test {
 protected:
  static constexpr std::size_t sequences = 4;
  static constexpr std::size_t lengths_at = 34;
  static constexpr std::size_t pointers_at = lengths_at + 4 * sequences;    // 50
  static constexpr std::size_t documents_at = pointers_at + 8 * sequences;  // 82
  static constexpr std::size_t end = documents_at + 8 * 3;                  // 106

  SpoiltIndex() {
    stoke::TokenStoreWriter<std::int32_t> writer(prefix_);
    const std::vector<std::int32_t> a{1, 2, 3}, b{}, c{4, 5, 6, 7, 8}, d{9, 10};
    writer.add_sequence(a);
    writer.add_sequence(b);
    writer.end_document();
    writer.add_sequence(c);
    writer.add_sequence(d);
    writer.end_document();
    writer.finish();
    idx_ = read_bytes(idx());
  }

  [[nodiscard]] std::filesystem::path idx() const { return dir_ / "c.idx"; }
  [[nodiscard]] std::filesystem::path bin() const { return dir_ / "c.bin"; }

  /// Writes the spoilt index and expects both `TokenStore` and `ShardedTokenStore` to refuse
  /// it with a message naming `file` (the index unless said) and holding `expected`.
  void expect_refused(const std::string& expected, const std::filesystem::path& file = {}) {
    write_bytes(idx(), idx_);
    const std::string named = (file.empty() ? idx() : file).string();
    for (const std::string& message :
         {message_of<stoke::InputError>([&] { stoke::TokenStore<std::int32_t> s(prefix_); }),
          message_of<stoke::InputError>(
              [&] { stoke::ShardedTokenStore<std::int32_t> s(std::vector{prefix_}); })}) {
      EXPECT_THAT(message, HasSubstr("'" + named + "'"));
      EXPECT_THAT(message, HasSubstr(expected));
    }
  }

  TempDir dir_;
  std::filesystem::path prefix_ = dir_ / "c";
  std::vector<std::byte> idx_;
};

TEST_F(SpoiltIndex, TheUnspoiltIndexOpens) {
  ASSERT_EQ(idx_.size(), end);
  const stoke::TokenStore<std::int32_t> store(prefix_);
  EXPECT_EQ(store.size(), sequences);
  EXPECT_EQ(store.document_count(), 2U);
}

TEST_F(SpoiltIndex, RefusesAnEmptyOrTruncatedHeader) {
  idx_.resize(20);
  expect_refused("at byte offset 20: the file ends after 20 bytes");
  idx_.clear();
  expect_refused("at byte offset 0: the file ends after 0 bytes");
}

TEST_F(SpoiltIndex, RefusesABadMagic) {
  idx_[3] = std::byte{'X'};
  expect_refused("at byte offset 3: not a Megatron index");
}

TEST_F(SpoiltIndex, RefusesAVersionOtherThan1) {
  put<std::uint64_t>(idx_, 9, 2);
  expect_refused("at byte offset 9: version 2");
}

TEST_F(SpoiltIndex, RefusesAnUnknownDtypeCode) {
  for (const std::uint8_t code : {0, 9, 255}) {
    put<std::uint8_t>(idx_, 17, code);
    expect_refused("at byte offset 17: unknown dtype code " + std::to_string(code));
  }
}

TEST_F(SpoiltIndex, RefusesCountsThatOverflowTheFile) {
  for (const std::uint64_t count :
       {std::uint64_t{7}, std::uint64_t{1} << 62, std::numeric_limits<std::uint64_t>::max()}) {
    put<std::uint64_t>(idx_, 18, count);
    expect_refused("at byte offset 18: sequence count " + std::to_string(count));
  }
  put<std::uint64_t>(idx_, 18, sequences);
  for (const std::uint64_t count : {std::uint64_t{4}, std::numeric_limits<std::uint64_t>::max()}) {
    put<std::uint64_t>(idx_, 26, count);
    expect_refused("at byte offset 26: document count " + std::to_string(count));
  }
  put<std::uint64_t>(idx_, 26, 0);
  expect_refused("at byte offset 26: document count 0");
}

TEST_F(SpoiltIndex, RefusesBytesAfterTheDocumentIndex) {
  idx_.push_back(std::byte{0});
  expect_refused("at byte offset 106: 1 bytes after the document index");
}

TEST_F(SpoiltIndex, ReadsTheModesOfAMultimodalIndex) {
  idx_.resize(end + sequences, std::byte{1});
  write_bytes(idx(), idx_);
  const stoke::TokenStore<std::int32_t> store(prefix_);
  EXPECT_TRUE(store.index().multimodal());
  EXPECT_EQ(store.get(2)[4], 8);
}

TEST_F(SpoiltIndex, RefusesANegativeLength) {
  put<std::int32_t>(idx_, lengths_at + 4, -1);
  expect_refused("at byte offset 38: sequence 1 has length -1");
}

TEST_F(SpoiltIndex, RefusesLengthsThatOverflowTheBin) {
  put<std::int32_t>(idx_, lengths_at + 12, std::numeric_limits<std::int32_t>::max());
  expect_refused(
      "at byte offset 46: sequence 3 of 2147483647 tokens from byte 32 ends at byte "
      "8589934620, past the end of '" +
      bin().string() + "' (40 bytes)");
}

TEST_F(SpoiltIndex, RefusesAPointerPastTheEndOfTheBin) {
  put<std::int64_t>(idx_, pointers_at + 16, 4000);
  expect_refused("at byte offset 66: sequence 2 begins at byte 4000 of '" + bin().string() +
                 "', past its end (40 bytes)");
  put<std::int64_t>(idx_, pointers_at + 16, -8);
  expect_refused("at byte offset 66: sequence 2 begins at byte -8");
}

TEST_F(SpoiltIndex, RefusesPointersThatDoNotFollowTheLengths) {
  put<std::int64_t>(idx_, pointers_at + 24, 28);  // overlaps sequence 2 (bytes 12 to 32)
  expect_refused("at byte offset 74: sequence 3 begins at byte 28");
  expect_refused("it must begin at byte 32");
}

TEST_F(SpoiltIndex, RefusesADocumentIndexThatDoesNotBeginWith0) {
  put<std::int64_t>(idx_, documents_at, 1);
  expect_refused("at byte offset 82: document index entry 0 is 1; the first entry must be 0");
}

TEST_F(SpoiltIndex, RefusesDocumentsOutOfOrder) {
  put<std::int64_t>(idx_, documents_at + 16, 1);
  expect_refused("at byte offset 98: document index entry 2 is 1, before entry 1 (2)");
}

TEST_F(SpoiltIndex, RefusesADocumentIndexPastTheSequenceCount) {
  put<std::int64_t>(idx_, documents_at + 16, 5);
  expect_refused("at byte offset 98: document index entry 2 is 5, past the sequence count 4");
}

TEST_F(SpoiltIndex, RefusesABinOfAnotherSizeNamingBothFiles) {
  auto bin_bytes = read_bytes(bin());
  bin_bytes.push_back(std::byte{0});
  write_bytes(bin(), bin_bytes);
  expect_refused("holds 41 bytes, but its index '" + idx().string() +
                     "' ends its last sequence at byte offset 40",
                 bin());
  bin_bytes.resize(36);
  write_bytes(bin(), bin_bytes);
  expect_refused("at byte offset 46: sequence 3 of 2 tokens from byte 32 ends at byte 40");
}

TEST_F(SpoiltIndex, RefusesABinThatChangedSizeAfterTheShardedStoreOpenedIt) {
  const stoke::ShardedTokenStore<std::int32_t> store(std::vector{prefix_});
  auto bin_bytes = read_bytes(bin());
  bin_bytes.resize(44);
  write_bytes(bin(), bin_bytes);
  const std::string message = message_of<stoke::InputError>([&] { (void)store.get(0); });
  EXPECT_THAT(message, HasSubstr("'" + bin().string() + "' holds 44 bytes now, 40 when"));
}

// Every byte of the index set to several values: the store opens, and then every sequence and
// document lies inside the .bin (read here, so that the sanitizers see a read out of bounds),
// or it is refused with an InputError naming the index or the .bin.
TEST_F(SpoiltIndex, EveryByteChangedOpensSafelyOrIsRefusedByName) {
  const std::vector<std::byte> good = idx_;
  const auto bin_size = std::filesystem::file_size(bin());
  std::size_t opened = 0;
  std::size_t refused = 0;
  for (std::size_t at = 0; at < good.size(); ++at) {
    for (const int value : {0x00, 0x01, 0x04, 0x7F, 0x80, 0xFF}) {
      idx_ = good;
      idx_[at] = static_cast<std::byte>(value);
      write_bytes(idx(), idx_);
      try {
        const stoke::TokenStore<std::int32_t> store(prefix_);
        std::int64_t sum = 0;
        for (std::size_t i = 0; i < store.size(); ++i) {
          for (const std::int32_t token : store.get(i)) sum += token;
          ASSERT_LE(static_cast<std::uintmax_t>(store.index().pointers()[i]) +
                        4 * static_cast<std::uintmax_t>(store.lengths()[i]),
                    bin_size);
        }
        for (std::size_t j = 0; j < store.document_count(); ++j) {
          for (const std::int32_t token : store.document(j)) sum += token;
        }
        volatile std::int64_t read = sum;  // the tokens are read, not optimised away
        (void)read;
        ++opened;
      } catch (const stoke::InputError& error) {
        EXPECT_THAT(error.what(), HasSubstr(dir_.path().string())) << "byte " << at;
        ++refused;
      }
    }
  }
  EXPECT_GT(refused, good.size());
  EXPECT_GT(opened, 0U);
}

}  // namespace

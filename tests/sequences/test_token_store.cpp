// The token store read in place: random corpora of every token type written with
// TokenStoreWriter and read back by TokenStore (sequences, lengths, documents, zero copy), and
// what the writer promises (atomic replacement, nothing left behind when dropped).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <numeric>
#include <ranges>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include <stoke/core/error.hpp>
#include <stoke/data/dataset.hpp>
#include <stoke/sequences/token_store.hpp>
#include <stoke/sequences/token_store_writer.hpp>
#include <stoke/sequences/unaligned_span.hpp>

#include "stoke_test_files.hpp"
#include "token_store_files.hpp"

namespace {

using stoke::testing::Corpus;
using stoke::testing::message_of;
using stoke::testing::random_corpus;
using stoke::testing::TempDir;
using stoke::testing::write_corpus;
using ::testing::HasSubstr;

static_assert(stoke::Dataset<stoke::TokenStore<std::uint16_t>>);
static_assert(std::is_same_v<stoke::dataset_item_t<stoke::TokenStore<std::int32_t>>,
                             std::span<const std::int32_t>>);
static_assert(!stoke::TokenType<std::uint32_t> && !stoke::TokenType<bool>);
static_assert(std::ranges::random_access_range<stoke::UnalignedSpan<std::int32_t>>);
static_assert(std::ranges::sized_range<stoke::UnalignedSpan<std::int64_t>>);

TEST(UnalignedSpan, ReadsValuesAtAnOddAddressWithTheRangeAlgorithms) {
  const std::vector<std::int32_t> values{7, -3, 42, 0, 19};
  std::vector<std::byte> bytes(1 + values.size() * sizeof(std::int32_t));
  std::memcpy(bytes.data() + 1, values.data(), values.size() * sizeof(std::int32_t));
  const stoke::UnalignedSpan<std::int32_t> view(bytes.data() + 1, values.size());
  EXPECT_EQ(std::vector<std::int32_t>(view.begin(), view.end()), values);
  EXPECT_EQ(*std::ranges::max_element(view), 42);
  EXPECT_EQ(std::accumulate(view.begin(), view.end(), 0), 65);
  EXPECT_EQ(view.end() - view.begin(), 5);
  EXPECT_EQ(view.begin()[2], 42);
  EXPECT_EQ(*(view.end() - 1), 19);
  const auto tail = view.subspan(3, 2);
  EXPECT_EQ(std::vector<std::int32_t>(tail.begin(), tail.end()),
            (std::vector<std::int32_t>{0, 19}));
  EXPECT_EQ(view.bytes().data(), bytes.data() + 1);
  EXPECT_EQ(view.bytes().size(), 20U);
}

/// Expects `store` to hold exactly `corpus`.
template <class T>
void expect_store_holds(const stoke::TokenStore<T>& store, const Corpus<T>& corpus) {
  ASSERT_EQ(store.size(), corpus.sequences.size());
  ASSERT_EQ(store.lengths().size(), corpus.sequences.size());
  ASSERT_EQ(store.document_count() + 1, corpus.document_index.size());
  std::size_t tokens = 0;
  for (std::size_t i = 0; i < store.size(); ++i) {
    const std::vector<T>& expected = corpus.sequences[i];
    ASSERT_EQ(store.lengths()[i], static_cast<std::int32_t>(expected.size())) << "sequence " << i;
    const std::span<const T> got = store.get(i);
    ASSERT_EQ(std::vector<T>(got.begin(), got.end()), expected) << "sequence " << i;
    tokens += expected.size();
  }
  EXPECT_EQ(store.token_count(), tokens);
  const auto index = store.index().document_index();
  EXPECT_EQ(std::vector<std::int64_t>(index.begin(), index.end()), corpus.document_index);
  for (std::size_t j = 0; j < store.document_count(); ++j) {
    std::vector<T> expected;
    for (auto s = corpus.document_index[j]; s < corpus.document_index[j + 1]; ++s) {
      const auto& sequence = corpus.sequences[static_cast<std::size_t>(s)];
      expected.insert(expected.end(), sequence.begin(), sequence.end());
    }
    const std::span<const T> got = store.document(j);
    ASSERT_EQ(std::vector<T>(got.begin(), got.end()), expected) << "document " << j;
  }
}

template <class T>
class TokenStoreRoundTrip : public ::testing::Test {};
using TokenTypes = ::testing::Types<std::uint8_t, std::int8_t, std::int16_t, std::uint16_t,
                                    std::int32_t, std::int64_t, float, double>;
TYPED_TEST_SUITE(TokenStoreRoundTrip, TokenTypes);

TYPED_TEST(TokenStoreRoundTrip, ReadsBackEveryRandomCorpusTheWriterWrote) {
  const TempDir dir;
  for (std::uint64_t seed = 1; seed <= 40; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    const auto corpus = random_corpus<TypeParam>(seed);
    const auto prefix = dir / ("corpus" + std::to_string(seed));
    write_corpus(prefix, corpus);
    const stoke::TokenStore<TypeParam> store(prefix);
    EXPECT_EQ(store.index().dtype(), stoke::dtype_of<TypeParam>());
    expect_store_holds(store, corpus);
  }
}

TYPED_TEST(TokenStoreRoundTrip, ReadsTheTokensInPlaceInTheMappedFile) {
  const TempDir dir;
  const auto corpus = random_corpus<TypeParam>(7, 20, 50, false);
  write_corpus(dir / "c", corpus);
  const stoke::TokenStore<TypeParam> store(dir / "c");
  const stoke::TokenStore<TypeParam> copy = store;  // shares the mapping
  const TypeParam* base = nullptr;
  for (std::size_t i = 0; i < store.size(); ++i) {
    if (store.get(i).empty()) continue;
    if (base == nullptr)
      base = store.get(i).data() -
             store.index().pointers()[i] / static_cast<std::int64_t>(sizeof(TypeParam));
    EXPECT_EQ(store.get(i).data(),
              base + store.index().pointers()[i] / static_cast<std::int64_t>(sizeof(TypeParam)));
    EXPECT_EQ(copy.get(i).data(), store.get(i).data());
  }
}

// The book's example (book/docs/sequences.md): write a store, read it in place.
TEST(TokenStore, WritesAndReadsAStoreAsTheBookShows) {
  const TempDir dir;
  const std::filesystem::path prefix = dir / "corpus";
  // --8<-- [start:write_and_read]
  stoke::TokenStoreWriter<std::uint16_t> writer(prefix);  // corpus.bin + corpus.idx
  const std::vector<std::uint16_t> hello{15496, 995, 50256}, bye{33, 50256};
  writer.add_document(hello);
  writer.add_document(bye);
  writer.finish();  // both files put in place atomically

  const stoke::TokenStore<std::uint16_t> store(prefix);        // mapped, the index checked whole
  const std::span<const std::uint16_t> tokens = store.get(1);  // in place: no copy
  const std::int32_t length = store.lengths()[0];              // from the index alone
  // --8<-- [end:write_and_read]
  EXPECT_EQ(std::vector<std::uint16_t>(tokens.begin(), tokens.end()), bye);
  EXPECT_EQ(length, 3);
}

TEST(TokenStore, ReadsAnEmptyStore) {
  const TempDir dir;
  stoke::TokenStoreWriter<std::uint16_t> writer(dir / "empty");
  writer.finish();
  const stoke::TokenStore<std::uint16_t> store(dir / "empty");
  EXPECT_EQ(store.size(), 0U);
  EXPECT_EQ(store.document_count(), 0U);
  EXPECT_EQ(store.token_count(), 0U);
  EXPECT_THAT(message_of<stoke::UsageError>([&] { (void)store.get(0); }), HasSubstr("TokenStore"));
}

TEST(TokenStore, RefusesATokenTypeOtherThanTheFilesNamingTheDtypeOffset) {
  const TempDir dir;
  write_corpus(dir / "c", random_corpus<std::int32_t>(3));
  const std::string message =
      message_of<stoke::InputError>([&] { stoke::TokenStore<std::uint16_t> store(dir / "c"); });
  EXPECT_THAT(message, HasSubstr((dir / "c.idx").string()));
  EXPECT_THAT(message, HasSubstr("at byte offset 17"));
  EXPECT_THAT(message, HasSubstr("int32, not the uint16"));
}

TEST(TokenStore, RefusesAMissingFileNamingIt) {
  const TempDir dir;
  EXPECT_THAT(
      message_of<stoke::InputError>([&] { stoke::TokenStore<std::int32_t> s(dir / "none"); }),
      HasSubstr((dir / "none.bin").string()));
}

TEST(TokenStoreWriter, EndsADocumentLeftOpenAtFinish) {
  const TempDir dir;
  stoke::TokenStoreWriter<std::int32_t> writer(dir / "c");
  const std::vector<std::int32_t> a{1, 2, 3};
  const std::vector<std::int32_t> b{4, 5};
  writer.add_document(a);
  writer.add_sequence(b);
  writer.add_sequence(a);
  writer.finish();
  const stoke::TokenStore<std::int32_t> store(dir / "c");
  EXPECT_EQ(store.size(), 3U);
  ASSERT_EQ(store.document_count(), 2U);
  EXPECT_EQ(std::vector<std::int32_t>(store.document(1).begin(), store.document(1).end()),
            (std::vector<std::int32_t>{4, 5, 1, 2, 3}));
  EXPECT_THROW(writer.add_document(a), stoke::UsageError);
  EXPECT_THROW(writer.finish(), stoke::UsageError);
}

TEST(TokenStoreWriter, LeavesNothingAndTheOldStoreWhenDroppedBeforeFinish) {
  const TempDir dir;
  const auto old = random_corpus<std::int16_t>(11);
  write_corpus(dir / "c", old);
  {
    stoke::TokenStoreWriter<std::int16_t> writer(dir / "c");
    const std::vector<std::int16_t> tokens(1000, 9);
    writer.add_document(tokens);
  }
  EXPECT_EQ(dir.entries(), (std::vector<std::string>{"c.bin", "c.idx"}));
  expect_store_holds(stoke::TokenStore<std::int16_t>(dir / "c"), old);
}

TEST(TokenStoreWriter, ReplacesAnOldStoreAndLeavesNoTemporaryFile) {
  const TempDir dir;
  write_corpus(dir / "c", random_corpus<std::int64_t>(12));
  const auto fresh = random_corpus<std::int64_t>(13);
  write_corpus(dir / "c", fresh);
  EXPECT_EQ(dir.entries(), (std::vector<std::string>{"c.bin", "c.idx"}));
  expect_store_holds(stoke::TokenStore<std::int64_t>(dir / "c"), fresh);
}

TEST(TokenStoreWriter, StreamsSequencesLargerThanItsBuffer) {
  const TempDir dir;
  Corpus<std::uint8_t> corpus;
  for (const std::size_t length : {std::size_t{3}, std::size_t{3} << 20, std::size_t{5}}) {
    corpus.sequences.emplace_back(length);
    for (std::size_t t = 0; t < length; ++t) {
      corpus.sequences.back()[t] = static_cast<std::uint8_t>(t * 7 + length);
    }
    corpus.document_index.push_back(static_cast<std::int64_t>(corpus.sequences.size()));
  }
  write_corpus(dir / "big", corpus);
  expect_store_holds(stoke::TokenStore<std::uint8_t>(dir / "big"), corpus);
}

}  // namespace

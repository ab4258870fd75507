// Megatron token stores read over HTTP through the byte store: the same sequences as
// ShardedTokenStore reads from the same files, the indexes checked at open (a corrupt one, or
// one of another token type, refused naming its URL and offset) and no `.bin` read then.
#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include <stoke/sequences/sharded_token_store.hpp>
#include <stoke/sequences/stored_token_store.hpp>
#include <stoke/sequences/token_store_writer.hpp>

#include "remote_fixture.hpp"

namespace {

using stoke_storage_test::servers;

/// Writes two token stores under the servers' data folder (which the HTTP server serves) in
/// `folder`: sequence i holds i + 1 tokens, the first of them i. Returns their keys' prefixes.
std::vector<std::string> write_stores(const std::string& folder) {
  const std::filesystem::path data = servers()["data"];
  std::filesystem::create_directories(data / folder);
  std::vector<std::string> prefixes;
  std::int32_t next = 0;
  for (const int count : {7, 5}) {
    prefixes.push_back(folder + "/part-" + std::to_string(prefixes.size()));
    stoke::TokenStoreWriter<std::int32_t> writer(data / prefixes.back());
    for (int i = 0; i < count; ++i, ++next) {
      std::vector<std::int32_t> tokens(static_cast<std::size_t>(next) + 1, next);
      writer.add_document(tokens);
    }
    writer.finish();
  }
  return prefixes;
}

std::shared_ptr<stoke::storage::HttpStore> http() {
  return std::make_shared<stoke::storage::HttpStore>(servers()["http"]);
}

TEST(StoredTokenStore, ReadsTheSequencesOfTheSameStoresReadFromFiles) {
  STOKE_REQUIRE_SERVERS();
  const auto prefixes = write_stores("tokens-same");
  std::vector<std::filesystem::path> files;
  for (const auto& prefix : prefixes) {
    files.push_back(std::filesystem::path(servers()["data"]) / prefix);
  }
  const stoke::ShardedTokenStore<std::int32_t> local(files);
  const stoke::StoredTokenStore<std::int32_t> remote(http(), prefixes, {.resident = 2});
  ASSERT_EQ(remote.size(), local.size());
  EXPECT_EQ(remote.size(), 12u);
  EXPECT_EQ(remote.shard_begins(), local.shard_begins());
  EXPECT_EQ(remote.cache_stats().loads, 0u) << "opening read a .bin object";
  EXPECT_EQ(remote.lengths(1)[0], 8);
  const std::vector<std::size_t> order{1, 0};
  remote.read_ahead(order);
  for (const std::size_t i : {7u, 11u, 0u, 6u}) {
    const auto got = remote.get(i);
    const auto expected = local.get(i);
    EXPECT_EQ(std::vector<std::int32_t>(got.values.begin(), got.values.end()),
              std::vector<std::int32_t>(expected.values.begin(), expected.values.end()))
        << "sequence " << i;
  }
  EXPECT_EQ(remote.cache_stats().loads, 2u);
}

TEST(StoredTokenStore, ACorruptIndexOrAnotherTokenTypeIsRefusedNamingTheUrlAndOffset) {
  STOKE_REQUIRE_SERVERS();
  const auto prefixes = write_stores("tokens-bad");
  try {
    const stoke::StoredTokenStore<std::uint16_t> wrong(http(), {prefixes[0]});
    FAIL() << "int32 tokens were read as uint16";
  } catch (const stoke::InputError& error) {
    const std::string what = error.what();
    EXPECT_NE(what.find("tokens-bad/part-0.idx"), std::string::npos) << what;
    EXPECT_NE(what.find("at byte offset 17: its tokens are int32"), std::string::npos) << what;
  }
  const std::filesystem::path idx =
      std::filesystem::path(servers()["data"]) / (prefixes[1] + ".idx");
  std::filesystem::resize_file(idx, 20);
  try {
    const stoke::StoredTokenStore<std::int32_t> corrupt(http(), prefixes);
    FAIL() << "a cut index was opened";
  } catch (const stoke::InputError& error) {
    const std::string what = error.what();
    EXPECT_NE(what.find(servers()["http"] + "/tokens-bad/part-1.idx"), std::string::npos) << what;
    EXPECT_NE(what.find("at byte offset 20"), std::string::npos) << what;
  }
}

TEST(StoredTokenStore, ABinObjectThatChangedSinceOpeningIsRefusedNamingIt) {
  STOKE_REQUIRE_SERVERS();
  const auto prefixes = write_stores("tokens-changed");
  const stoke::StoredTokenStore<std::int32_t> remote(http(), prefixes, {.io_threads = 0});
  std::ofstream(std::filesystem::path(servers()["data"]) / (prefixes[1] + ".bin"),
                std::ios::app | std::ios::binary)
      << "more";
  try {
    (void)remote.get(8);
    FAIL() << "a changed .bin object was read";
  } catch (const stoke::InputError& error) {
    const std::string what = error.what();
    EXPECT_NE(what.find("tokens-changed/part-1.bin holds"), std::string::npos) << what;
    EXPECT_NE(what.find("when the store was opened"), std::string::npos) << what;
  }
}

}  // namespace

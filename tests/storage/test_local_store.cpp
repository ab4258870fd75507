// The storage layer's core: URLs, the local store, the scheme registry and key globs.
#include <gtest/gtest.h>

#include <unistd.h>
#include <cstddef>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include <stoke/storage.hpp>

namespace {

using stoke::storage::LocalStore;
using stoke::storage::ObjectInfo;

std::vector<std::byte> bytes_of(const std::string& text) {
  std::vector<std::byte> bytes(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) bytes[i] = static_cast<std::byte>(text[i]);
  return bytes;
}

/// A folder of a few files, removed afterwards.
class LocalStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = std::filesystem::temp_directory_path() /
            ("stoke_local_store_" + std::to_string(::getpid()));
    std::filesystem::remove_all(root_);
    write("shards/a-000.bin", "first shard");
    write("shards/a-001.bin", "second");
    write("shards/b-000.bin", "other");
    write("shards/deeper/a-002.bin", "deep");
    write("top.txt", "top");
  }
  void TearDown() override { std::filesystem::remove_all(root_); }
  void write(const std::string& key, const std::string& text) {
    std::filesystem::create_directories((root_ / key).parent_path());
    std::ofstream(root_ / key, std::ios::binary) << text;
  }
  std::filesystem::path root_;
};

TEST(StorageUrl, SplitsSchemeAuthorityAndPath) {
  const auto s3 = stoke::storage::StorageUrl::parse("S3://bucket/train/a.tar");
  EXPECT_EQ(s3.scheme, "s3");
  EXPECT_EQ(s3.authority, "bucket");
  EXPECT_EQ(s3.path, "train/a.tar");
  const auto http = stoke::storage::StorageUrl::parse("http://host:8080/x/y");
  EXPECT_EQ(http.authority, "host:8080");
  EXPECT_EQ(http.path, "x/y");
  EXPECT_EQ(stoke::storage::StorageUrl::parse("file:///data/x").path, "/data/x");
  const auto plain = stoke::storage::StorageUrl::parse("data/x.npy");
  EXPECT_EQ(plain.scheme, "file");
  EXPECT_EQ(plain.path, "data/x.npy");
  EXPECT_THROW((void)stoke::storage::StorageUrl::parse(""), stoke::UsageError);
  EXPECT_THROW((void)stoke::storage::StorageUrl::parse("://x"), stoke::UsageError);
}

TEST_F(LocalStoreTest, ListsByPrefixSortedWithSizes) {
  const LocalStore store(root_);
  const std::vector<ObjectInfo> expected{{"shards/a-000.bin", 11, ""},
                                         {"shards/a-001.bin", 6, ""},
                                         {"shards/deeper/a-002.bin", 4, ""}};
  EXPECT_EQ(store.list("shards/a-"), std::vector<ObjectInfo>(expected.begin(), expected.end() - 1));
  EXPECT_EQ(store.list("shards/").size(), 4u);
  EXPECT_EQ(store.list("").size(), 5u);
  EXPECT_TRUE(store.list("absent/").empty());
}

TEST_F(LocalStoreTest, ReadsWholeObjectsAndRanges) {
  const LocalStore store(root_);
  EXPECT_EQ(store.read("shards/a-000.bin"), bytes_of("first shard"));
  EXPECT_EQ(store.read_range("shards/a-000.bin", 6, 5), bytes_of("shard"));
  EXPECT_EQ(store.stat("shards/a-001.bin"), (ObjectInfo{"shards/a-001.bin", 6, ""}));
}

TEST_F(LocalStoreTest, RefusesRangesPastTheEndAndMissingFilesNamingThem) {
  const LocalStore store(root_);
  try {
    (void)store.read_range("shards/a-001.bin", 4, 10);
    FAIL() << "a range past the end was read";
  } catch (const stoke::InputError& error) {
    EXPECT_NE(std::string(error.what()).find("a-001.bin' at offset 6"), std::string::npos)
        << error.what();
  }
  EXPECT_THROW((void)store.stat("missing.bin"), stoke::InputError);
  EXPECT_THROW((void)store.read("missing.bin"), stoke::InputError);
}

TEST_F(LocalStoreTest, GlobsMatchWithinOnePathPart) {
  const LocalStore store(root_);
  const auto matched = stoke::storage::list_matching(store, "shards/a-*.bin");
  ASSERT_EQ(matched.size(), 2u);  // not shards/deeper/a-002.bin: * stays within one part
  EXPECT_EQ(matched[0].key, "shards/a-000.bin");
  EXPECT_EQ(matched[1].key, "shards/a-001.bin");
  EXPECT_EQ(stoke::storage::list_matching(store, "shards/?-000.bin").size(), 2u);
  EXPECT_EQ(stoke::storage::list_matching(store, "shards/").size(), 4u);
  EXPECT_EQ(stoke::storage::list_matching(store, "top.txt").front().size, 3u);
  EXPECT_THROW((void)stoke::storage::list_matching(store, "shards/z-*.bin"), stoke::InputError);
}

TEST_F(LocalStoreTest, OpensPlainPathsAndFileUrls) {
  const auto objects = stoke::storage::list_url((root_ / "shards/a-*.bin").string());
  ASSERT_EQ(objects.objects.size(), 2u);
  EXPECT_EQ(objects.store->read(objects.objects[1].key), bytes_of("second"));
  const auto location = stoke::storage::open_url("file://" + (root_ / "top.txt").string());
  EXPECT_EQ(location.store->read(location.key), bytes_of("top"));
}

/// A user's own scheme: every key reads as its own name.
class EchoStore final : public stoke::storage::ByteStore {
 public:
  std::vector<ObjectInfo> list(std::string_view prefix) const override {
    return {{std::string(prefix) + "x", 1, ""}};
  }
  ObjectInfo stat(std::string_view key) const override {
    return {std::string(key), key.size(), ""};
  }
  std::string describe(std::string_view key) const override { return "echo:" + std::string(key); }

 protected:
  std::vector<std::byte> read_object_range(std::string_view key, std::uint64_t offset,
                                           std::uint64_t length,
                                           const stoke::storage::FetchContext&) const override {
    return bytes_of(std::string(key.substr(offset, length)));
  }
};

TEST(StoreRegistry, ServesAUsersSchemeAndNamesUnknownOnes) {
  stoke::storage::StoreRegistry registry;
  try {
    (void)registry.open("echo://here/abc");
    FAIL() << "an unknown scheme was opened";
  } catch (const stoke::UsageError& error) {
    EXPECT_NE(std::string(error.what()).find("scheme 'echo'"), std::string::npos) << error.what();
    EXPECT_NE(std::string(error.what()).find("known schemes: file"), std::string::npos);
  }
  registry.add("echo", [](const stoke::storage::StorageUrl& url) {
    return stoke::storage::StoreLocation{std::make_shared<EchoStore>(), url.path};
  });
  EXPECT_TRUE(registry.has("echo"));
  const auto location = registry.open("echo://here/abc");
  EXPECT_EQ(location.store->read(location.key), bytes_of("abc"));
  EXPECT_EQ(location.store->read_range(location.key, 1, 2), bytes_of("bc"));
}

}  // namespace

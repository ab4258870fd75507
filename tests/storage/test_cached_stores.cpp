// `.npy` shards from S3 read through a node cache: the batches of the files read locally, each
// shard fetched once per node however many loaders (processes) read it, nothing fetched on an
// epoch the cache holds, and a bound too small for the read-ahead refused at open.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include <stoke/data/sources/npy.hpp>
#include <stoke/data/sources/stored_arrays.hpp>
#include <stoke/storage/cached_store.hpp>

#include "array_batches.hpp"
#include "remote_fixture.hpp"

namespace {

using stoke_storage_test::batches_of;
using stoke_storage_test::servers;

/// The npy shards of the fixture, their manifest, and a cache folder removed afterwards.
class CachedStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    STOKE_REQUIRE_SERVERS();
    folder_ = std::filesystem::temp_directory_path() /
              ("stoke_cached_stores_" + std::to_string(::getpid()));
    std::filesystem::remove_all(folder_);
    const stoke::storage::LocalStore local(servers()["data"]);
    manifest_ = stoke::make_npy_manifest(local, keys_);
    for (const auto& shard : manifest_.shards) shard_bytes_ += shard.bytes;
  }
  void TearDown() override { std::filesystem::remove_all(folder_); }

  /// The shards from S3 through a new handle on the cache (a process of the node).
  [[nodiscard]] stoke::ShardedArrays<float> remote(std::uint64_t max_bytes) const {
    auto cache = std::make_shared<stoke::storage::NodeCache>(
        stoke::storage::NodeCacheOptions{folder_, max_bytes});
    auto store = std::make_shared<stoke::storage::CachedStore>(
        std::make_shared<stoke::storage::S3Store>(servers()["bucket"], servers().settings()),
        cache);
    caches_.push_back(cache);
    return {manifest_.keys(),
            stoke::stored_npy_format(store, manifest_),
            {.resident = 3, .io_threads = 1}};
  }

  const std::vector<std::string> keys_{"npy/part-00.npy", "npy/part-01.npy", "npy/part-02.npy",
                                       "npy/part-03.npy", "npy/part-04.npy"};
  std::filesystem::path folder_;
  stoke::ArrayManifest manifest_;
  std::uint64_t shard_bytes_ = 0;
  mutable std::vector<std::shared_ptr<stoke::storage::NodeCache>> caches_;
};

TEST_F(CachedStoreTest, TwoLoadersFetchEachShardOnceAndNothingOnTheNextEpoch) {
  std::vector<std::filesystem::path> files;
  for (const auto& key : keys_) files.push_back(std::filesystem::path(servers()["data"]) / key);
  const auto expected = batches_of(stoke::ShardedArrays<float>(files, stoke::npy_format()), 1);

  const auto first = remote(shard_bytes_);
  EXPECT_EQ(batches_of(first, 1), expected);
  EXPECT_EQ(caches_[0]->totals().fetched_bytes, shard_bytes_);
  const auto second = remote(shard_bytes_);
  EXPECT_EQ(batches_of(second, 1), expected);
  EXPECT_EQ(batches_of(first, 1), expected);
  EXPECT_EQ(caches_[0]->totals().fetched_bytes, shard_bytes_) << "an epoch the cache holds fetched";
  EXPECT_EQ(caches_[1]->stats().fetches, 0U);
}

TEST_F(CachedStoreTest, ABoundBelowTheReadAheadIsRefusedAtOpen) {
  try {
    (void)remote(100);
    FAIL() << "a 100-byte node cache was accepted";
  } catch (const stoke::UsageError& error) {
    const std::string message = error.what();
    EXPECT_NE(message.find("set max_bytes to at least"), std::string::npos) << message;
    EXPECT_NE(message.find("the npy shards of s3://"), std::string::npos) << message;
  }
}

}  // namespace

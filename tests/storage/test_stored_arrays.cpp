// `.npy` shards read from S3 through the byte store: a loader over s3:// yields exactly the
// batches of the same files read locally, and opening with a manifest reads nothing remote.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include <stoke/data/sources/npy.hpp>
#include <stoke/data/sources/stored_arrays.hpp>

#include "array_batches.hpp"
#include "counting_store.hpp"
#include "remote_fixture.hpp"

namespace {

using stoke_storage_test::batches_of;
using stoke_storage_test::CountingStore;
using stoke_storage_test::servers;

TEST(StoredArrays, AnS3LoaderYieldsTheBatchesOfTheSameFilesReadLocally) {
  STOKE_REQUIRE_SERVERS();
  const std::vector<std::string> keys{"npy/part-00.npy", "npy/part-01.npy", "npy/part-02.npy",
                                      "npy/part-03.npy", "npy/part-04.npy"};
  const stoke::storage::LocalStore local(servers()["data"]);
  const stoke::ArrayManifest manifest = stoke::ArrayManifest::from_json(
      stoke::make_npy_manifest(local, keys).to_json(), "written here");
  EXPECT_EQ(manifest.shards[2], (stoke::StoredShard{"npy/part-02.npy", 45, 128 + 45 * 32}));

  stoke::storage::TransferOptions options;
  options.part_size = 2048;  // several parts a shard
  auto s3 = std::make_shared<CountingStore>(std::make_shared<stoke::storage::S3Store>(
      servers()["bucket"], servers().settings(), options));
  const stoke::ShardedArrays<float> remote(manifest.keys(), stoke::stored_npy_format(s3, manifest),
                                           {.resident = 3, .io_threads = 1});
  EXPECT_EQ(s3->reads.load(), 0u) << "opening read from the store";
  EXPECT_EQ(remote.size(), 163u);

  std::vector<std::filesystem::path> files;
  for (const auto& key : keys) files.push_back(std::filesystem::path(servers()["data"]) / key);
  const stoke::ShardedArrays<float> local_arrays(files, stoke::npy_format(), {.resident = 3});
  const auto expected = batches_of(local_arrays, 2);
  EXPECT_EQ(batches_of(remote, 2), expected);
  EXPECT_GE(s3->reads.load(), keys.size());
}

TEST(StoredArrays, AShardThatDisagreesWithTheManifestIsRefusedNamingIt) {
  STOKE_REQUIRE_SERVERS();
  const stoke::storage::LocalStore local(servers()["data"]);
  stoke::ArrayManifest manifest = stoke::make_npy_manifest(local, {"npy/part-01.npy"});
  manifest.shards[0].rows = 21;  // the file holds 20
  const auto store =
      std::make_shared<stoke::storage::S3Store>(servers()["bucket"], servers().settings());
  const stoke::ShardedArrays<float> arrays(
      manifest.keys(), stoke::stored_npy_format(store, manifest), {.io_threads = 0});
  try {
    (void)arrays.get(0);
    FAIL() << "a shard unlike its manifest was read";
  } catch (const stoke::InputError& error) {
    EXPECT_NE(std::string(error.what()).find("s3://stoke/npy/part-01.npy"), std::string::npos)
        << error.what();
    EXPECT_NE(std::string(error.what()).find("the manifest says"), std::string::npos)
        << error.what();
  }
}

}  // namespace

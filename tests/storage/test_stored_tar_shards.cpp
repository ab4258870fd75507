// WebDataset tar shards read from S3 through the byte store: the same samples as TarShards
// reads from the same files, opened from a manifest without a read.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include <stoke/images/stored_tar_shards.hpp>
#include <stoke/images/tar_shards.hpp>

#include "remote_fixture.hpp"

namespace {

using stoke_storage_test::servers;

const std::vector<std::string> tar_keys{"tar/shard-0.tar", "tar/shard-1.tar", "tar/shard-2.tar"};

TEST(StoredTarShards, ReadTheSamplesOfTheSameShardsReadLocally) {
  STOKE_REQUIRE_SERVERS();
  const stoke::storage::LocalStore local_store(servers()["data"]);
  const std::vector<stoke::StoredShard> manifest =
      stoke::images::make_tar_manifest(local_store, tar_keys);
  EXPECT_EQ(manifest[1].rows, 5u);

  std::vector<std::filesystem::path> files;
  for (const auto& key : tar_keys) files.push_back(std::filesystem::path(servers()["data"]) / key);
  const stoke::images::TarShards local(files);
  const auto s3 =
      std::make_shared<stoke::storage::S3Store>(servers()["bucket"], servers().settings());
  const stoke::images::StoredTarShards remote(s3, manifest, {}, {.resident = 2});
  ASSERT_EQ(remote.size(), local.size());
  EXPECT_EQ(remote.shard_begins(), local.shard_begins());
  EXPECT_EQ(remote.cache_stats().loads, 0u) << "opening read a shard";
  const std::vector<std::size_t> order{2, 0, 1};
  remote.read_ahead(order);
  for (const std::size_t k : order) {
    const std::size_t end = k + 1 < order.size() ? local.shard_begins()[k + 1] : local.size();
    for (std::size_t i = local.shard_begins()[k]; i < end; ++i) {
      const auto expected = local.get(i);
      const auto got = remote.get(i);
      EXPECT_EQ(std::vector<std::uint8_t>(got.bytes.begin(), got.bytes.end()),
                std::vector<std::uint8_t>(expected.bytes.begin(), expected.bytes.end()))
          << "sample " << i;
      EXPECT_EQ(got.label, expected.label) << "sample " << i;
      EXPECT_NE(got.source.find("s3://stoke/tar/shard-"), std::string::npos) << got.source;
      EXPECT_EQ(remote.key(i), local.key(i)) << "sample " << i;
    }
  }
  const std::vector<std::string> names = remote.shard_names();
  ASSERT_EQ(names.size(), tar_keys.size());
  for (std::size_t k = 0; k < names.size(); ++k) {
    EXPECT_TRUE(names[k].starts_with("s3://stoke/" + tar_keys[k] + " (")) << names[k];
  }
  EXPECT_EQ(remote.cache_stats().loads, 3u);
}

TEST(StoredTarShards, AShardUnlikeItsManifestIsRefusedNamingIt) {
  STOKE_REQUIRE_SERVERS();
  const stoke::storage::LocalStore local_store(servers()["data"]);
  auto manifest = stoke::images::make_tar_manifest(local_store, {tar_keys[1]});
  manifest[0].rows = 6;
  const stoke::images::StoredTarShards remote(
      std::make_shared<stoke::storage::S3Store>(servers()["bucket"], servers().settings()),
      manifest, {}, {.io_threads = 0});
  try {
    (void)remote.get(0);
    FAIL() << "a shard unlike its manifest was read";
  } catch (const stoke::InputError& error) {
    EXPECT_NE(std::string(error.what()).find("holds 5 samples; the manifest says 6"),
              std::string::npos)
        << error.what();
  }
}

}  // namespace

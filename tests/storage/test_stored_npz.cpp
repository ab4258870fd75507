// `.npz` shards read through the byte store (S3, HTTP and local files): a loader yields exactly
// the batches of the same files read locally with NpzFile, stored members are viewed in place in
// the fetched object, opening with a manifest reads nothing, and a damaged object (a wrong
// CRC-32, cut short, or unlike its manifest) is refused naming its URL.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <stoke/data/sources/npz.hpp>
#include <stoke/data/sources/stored_npz.hpp>

#include "array_batches.hpp"
#include "counting_store.hpp"
#include "remote_fixture.hpp"

namespace {

using stoke_storage_test::batches_of;
using stoke_storage_test::CountingStore;
using stoke_storage_test::servers;

/// The fixture's four `.npz` shards of one kind ("stored" or "deflated").
std::vector<std::string> npz_keys(const std::string& kind) {
  std::vector<std::string> keys;
  for (int i = 0; i < 4; ++i) keys.push_back("npz/" + kind + "-0" + std::to_string(i) + ".npz");
  return keys;
}

/// The stores that serve the fixture's files, by name: SeaweedFS's S3 (reading in several parts
/// a shard), the HTTP server, and the local folder.
std::vector<std::pair<std::string, std::shared_ptr<const stoke::storage::ByteStore>>>
npz_test_stores() {
  stoke::storage::TransferOptions options;
  options.part_size = 256;
  return {{"s3", std::make_shared<stoke::storage::S3Store>(servers()["bucket"],
                                                           servers().settings(), options)},
          {"http", std::make_shared<stoke::storage::HttpStore>(servers()["http"])},
          {"local", std::make_shared<stoke::storage::LocalStore>(servers()["data"])}};
}

/// How the test reads array `x` of local `.npz` files: with `NpzFile`, as a user would.
stoke::ArrayFileFormat local_npz_format() {
  return {
      .info =
          [](const std::filesystem::path& path) { return stoke::NpzFile(path).load("x").info(); },
      .load = [](const std::filesystem::path& path) { return stoke::NpzFile(path).load("x"); }};
}

/// The bytes of a fixture file, and writing bytes to a file of the HTTP server's folder.
std::vector<std::byte> fixture_bytes(const std::string& key) {
  return servers().local(key);
}
void put_file(const std::string& key, const std::vector<std::byte>& bytes) {
  const std::filesystem::path path = std::filesystem::path(servers()["data"]) / key;
  std::filesystem::create_directories(path.parent_path());
  std::ofstream(path, std::ios::binary)
      .write(reinterpret_cast<const char*>(bytes.data()),
             static_cast<std::streamsize>(bytes.size()));
}

/// `bytes` with the CRC-32 that the central directory records for `member` changed.
std::vector<std::byte> with_wrong_crc(std::vector<std::byte> bytes, const std::string& member) {
  for (std::size_t at = 0; at + 46 + member.size() <= bytes.size(); ++at) {
    const auto byte = [&](std::size_t i) { return std::to_integer<unsigned>(bytes[at + i]); };
    if (byte(0) == 0x50 && byte(1) == 0x4b && byte(2) == 0x01 && byte(3) == 0x02 &&
        std::string(reinterpret_cast<const char*>(&bytes[at + 46]), member.size()) == member) {
      bytes[at + 16] ^= std::byte{0x5a};
      return bytes;
    }
  }
  ADD_FAILURE() << "no central directory record of " << member;
  return bytes;
}

/// The `InputError` that reading row 0 of the `.npz` shards of `manifest` in `store` throws.
std::string npz_refusal(std::shared_ptr<const stoke::storage::ByteStore> store,
                        const stoke::ArrayManifest& manifest) {
  const stoke::ShardedArrays<float> arrays(
      manifest.keys(), stoke::stored_npz_format(std::move(store), manifest, "x"),
      {.io_threads = 0});
  try {
    (void)arrays.get(0);
  } catch (const stoke::InputError& error) {
    return error.what();
  }
  ADD_FAILURE() << "a damaged .npz object was read";
  return "";
}

TEST(StoredNpz, StoredAndDeflatedShardsGiveTheBatchesOfTheSameFilesReadLocally) {
  STOKE_REQUIRE_SERVERS();
  const stoke::storage::LocalStore local(servers()["data"]);
  for (const std::string kind : {"stored", "deflated"}) {
    const std::vector<std::string> keys = npz_keys(kind);
    const stoke::ArrayManifest manifest = stoke::ArrayManifest::from_json(
        stoke::make_npz_manifest(local, keys, "x").to_json(), "written here");
    EXPECT_EQ(manifest.dtype, stoke::DType::f32);
    EXPECT_EQ(manifest.row_shape, std::vector<std::size_t>{6});
    EXPECT_EQ(manifest.shards[1], (stoke::StoredShard{keys[1], 17, fixture_bytes(keys[1]).size()}));

    std::vector<std::filesystem::path> files;
    for (const auto& key : keys) files.push_back(std::filesystem::path(servers()["data"]) / key);
    const stoke::ShardedArrays<float> local_arrays(files, local_npz_format(), {.resident = 2});
    const auto expected = batches_of(local_arrays, 2);
    std::vector<int> seen(81 * 6, 0);
    for (const auto& batch : expected) {
      for (const std::size_t value : batch) ++seen.at(value);
    }
    EXPECT_EQ(std::count(seen.begin(), seen.end(), 2), 81 * 6) << "each value once an epoch";

    for (const auto& [name, store] : npz_test_stores()) {
      SCOPED_TRACE(kind + " over " + name);
      auto counting = std::make_shared<CountingStore>(store);
      const stoke::ShardedArrays<float> remote(manifest.keys(),
                                               stoke::stored_npz_format(counting, manifest, "x"),
                                               {.resident = 2, .io_threads = 1});
      EXPECT_EQ(counting->reads.load(), 0u) << "opening read from the store";
      EXPECT_EQ(remote.size(), 81u);
      EXPECT_EQ(batches_of(remote, 2), expected);
      EXPECT_GE(counting->reads.load(), keys.size());
    }
  }
}

TEST(StoredNpz, AStoredMemberIsViewedInPlaceInTheFetchedObject) {
  STOKE_REQUIRE_SERVERS();
  const auto http = std::make_shared<stoke::storage::HttpStore>(servers()["http"]);
  for (const std::string kind : {"stored", "deflated"}) {
    const std::string key = npz_keys(kind)[2];
    const stoke::ArrayManifest manifest = stoke::make_npz_manifest(*http, {key}, "x");
    const stoke::ArrayShard shard = stoke::stored_npz_format(http, manifest, "x").load(key);
    EXPECT_EQ(shard.info(), (stoke::ArrayInfo{stoke::DType::f32, {30, 6}}));
    EXPECT_EQ(shard.path(), std::filesystem::path(key) / "x.npy");
    // Both kinds keep their bytes in a vector: the fetched object, or the inflated array.
    const auto& owner = *std::static_pointer_cast<const std::vector<std::byte>>(shard.owner());
    const bool inside = shard.bytes().data() >= owner.data() &&
                        shard.bytes().data() + shard.bytes().size() <= owner.data() + owner.size();
    EXPECT_TRUE(inside) << kind;
    EXPECT_EQ(owner.size(), kind == "stored" ? manifest.shards[0].bytes : 30 * 6 * 4) << kind;
  }
}

TEST(StoredNpz, AnObjectWithAWrongCrcIsRefusedNamingItsUrl) {
  STOKE_REQUIRE_SERVERS();
  const auto http = std::make_shared<stoke::storage::HttpStore>(servers()["http"]);
  for (const std::string kind : {"stored", "deflated"}) {
    const std::string key = "npz-crc/" + kind + ".npz";
    put_file(key, fixture_bytes(npz_keys(kind)[1]));
    const stoke::ArrayManifest manifest = stoke::make_npz_manifest(*http, {key}, "x");
    put_file(key, with_wrong_crc(fixture_bytes(npz_keys(kind)[1]), "x.npy"));
    const std::string url = servers()["http"] + "/" + key;
    const std::string what = npz_refusal(http, manifest);
    EXPECT_NE(what.find("npz object " + url), std::string::npos) << what;
    EXPECT_NE(what.find("member 'x.npy'"), std::string::npos) << what;
    EXPECT_NE(what.find("CRC-32 mismatch"), std::string::npos) << what;
    // Writing a manifest of it refuses it too.
    try {
      (void)stoke::make_npz_manifest(*http, {key}, "x");
      ADD_FAILURE() << "a manifest of a " << kind << " object with a wrong CRC was made";
    } catch (const stoke::InputError& error) {
      EXPECT_NE(std::string(error.what()).find(url), std::string::npos) << error.what();
    }
  }
}

TEST(StoredNpz, AnObjectCutShortOrUnlikeItsManifestIsRefusedNamingItsUrl) {
  STOKE_REQUIRE_SERVERS();
  const auto http = std::make_shared<stoke::storage::HttpStore>(servers()["http"]);
  const std::string key = "npz-cut/stored.npz";
  std::vector<std::byte> bytes = fixture_bytes(npz_keys("stored")[0]);
  put_file(key, bytes);
  stoke::ArrayManifest manifest = stoke::make_npz_manifest(*http, {key}, "x");
  bytes.resize(bytes.size() - 30);
  put_file(key, bytes);
  const std::string url = servers()["http"] + "/" + key;
  std::string what = npz_refusal(http, manifest);
  EXPECT_NE(what.find("npz object " + url + " has " + std::to_string(bytes.size()) +
                      " bytes; the manifest says " + std::to_string(bytes.size() + 30)),
            std::string::npos)
      << what;
  manifest.shards[0].bytes = bytes.size();  // the size checked, the archive is still cut
  what = npz_refusal(http, manifest);
  EXPECT_NE(what.find("npz object " + url + ": not a zip file"), std::string::npos) << what;

  // Over S3 a size unlike the manifest names the s3:// URL.
  stoke::ArrayManifest s3_manifest = stoke::make_npz_manifest(
      stoke::storage::LocalStore(servers()["data"]), {npz_keys("deflated")[3]}, "x");
  s3_manifest.shards[0].bytes += 1;
  what = npz_refusal(
      std::make_shared<stoke::storage::S3Store>(servers()["bucket"], servers().settings()),
      s3_manifest);
  EXPECT_NE(what.find("npz object s3://stoke/" + npz_keys("deflated")[3] + " "), std::string::npos)
      << what;
  EXPECT_NE(what.find("bytes; the manifest says " + std::to_string(s3_manifest.shards[0].bytes)),
            std::string::npos)
      << what;
}

TEST(StoredNpz, AMissingArrayIsRefusedNamingTheUrlAndTheArraysThereAre) {
  STOKE_REQUIRE_SERVERS();
  const stoke::storage::HttpStore http(servers()["http"]);
  try {
    (void)stoke::make_npz_manifest(http, {npz_keys("stored")[0]}, "z");
    FAIL() << "a missing array was found";
  } catch (const stoke::InputError& error) {
    const std::string what = error.what();
    EXPECT_NE(what.find("npz object " + servers()["http"] + "/npz/stored-00.npz has no array 'z'"),
              std::string::npos)
        << what;
    EXPECT_NE(what.find("its arrays: 'y', 'x'"), std::string::npos) << what;
  }
}

}  // namespace

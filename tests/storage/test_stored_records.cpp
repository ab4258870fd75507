// Record files read through the byte store (S3, HTTP and local files) as the shards of a
// ShardedArrays<std::uint8_t>: a loader yields exactly the batches of the same files read
// locally with MmapRecordDataset, the manifest comes from the objects' sizes (no object read),
// and an object that is not a whole number of records, or unlike its manifest, is refused naming
// its URL and the numbers.
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include <stoke/data/sources/mmap_records.hpp>
#include <stoke/data/sources/stored_records.hpp>

#include "array_batches.hpp"
#include "counting_store.hpp"
#include "remote_fixture.hpp"

namespace {

using stoke_storage_test::batches_of;
using stoke_storage_test::CountingStore;
using stoke_storage_test::servers;

constexpr std::size_t record_size = 12;  // the fixture's records

/// The fixture's four record files.
const std::vector<std::string> record_keys{"records/part-00.bin", "records/part-01.bin",
                                           "records/part-02.bin", "records/part-03.bin"};

/// The records of local files, read with `MmapRecordDataset`, file `k` a shard: what a user
/// reads locally, as rows of bytes.
class LocalRecords {
 public:
  explicit LocalRecords(const std::vector<std::string>& keys) {
    std::size_t rows = 0;
    for (const auto& key : keys) {
      files_.emplace_back(std::filesystem::path(servers()["data"]) / key, record_size);
      begins_.push_back(rows);
      rows += files_.back().size();
    }
    size_ = rows;
  }
  [[nodiscard]] std::size_t size() const { return size_; }
  [[nodiscard]] const std::vector<std::size_t>& shard_begins() const { return begins_; }
  [[nodiscard]] stoke::ArrayRow<std::uint8_t> get(std::size_t index) const {
    std::size_t k = begins_.size() - 1;
    while (begins_[k] > index) --k;
    const stoke::RecordBytes record = files_[k].get(index - begins_[k]);
    return {{reinterpret_cast<const std::uint8_t*>(record.data()), record.size()}, nullptr};
  }

 private:
  std::vector<stoke::MmapRecordDataset> files_;
  std::vector<std::size_t> begins_;
  std::size_t size_ = 0;
};

/// The stores that serve the fixture's files, by name: SeaweedFS's S3, HTTP and local.
std::vector<std::pair<std::string, std::shared_ptr<const stoke::storage::ByteStore>>>
record_test_stores() {
  return {
      {"s3", std::make_shared<stoke::storage::S3Store>(servers()["bucket"], servers().settings())},
      {"http", std::make_shared<stoke::storage::HttpStore>(servers()["http"])},
      {"local", std::make_shared<stoke::storage::LocalStore>(servers()["data"])}};
}

/// Writes `bytes` bytes counting up as the file `key` of the HTTP server's folder.
void put_records(const std::string& key, std::size_t bytes) {
  const std::filesystem::path path = std::filesystem::path(servers()["data"]) / key;
  std::filesystem::create_directories(path.parent_path());
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  for (std::size_t i = 0; i < bytes; ++i) out.put(static_cast<char>(i % 251));
}

/// The `InputError` that `run` throws.
template <class Run>
std::string record_refusal(Run run) {
  try {
    run();
  } catch (const stoke::InputError& error) {
    return error.what();
  }
  ADD_FAILURE() << "no InputError";
  return "";
}

TEST(StoredRecords, ReadTheBatchesOfTheSameRecordFilesReadLocally) {
  STOKE_REQUIRE_SERVERS();
  const LocalRecords local(record_keys);
  ASSERT_EQ(local.size(), 50u);
  const auto expected = batches_of<std::uint8_t>(local, 2);
  for (const auto& [name, store] : record_test_stores()) {
    SCOPED_TRACE(name);
    auto counting = std::make_shared<CountingStore>(store);
    const std::vector<stoke::StoredShard> shards = stoke::stored_shards_from_json(
        stoke::stored_shards_json(stoke::make_record_manifest(*counting, record_keys, record_size)),
        "written here");
    EXPECT_EQ(counting->reads.load(), record_keys.size()) << "one stat an object, no read";
    EXPECT_EQ(shards[2], (stoke::StoredShard{record_keys[2], 21, 21 * record_size}));
    const stoke::ShardedArrays<std::uint8_t> remote(
        stoke::stored_shard_keys(shards),
        stoke::stored_records_format(counting, shards, record_size),
        {.resident = 2, .io_threads = 1});
    EXPECT_EQ(counting->reads.load(), record_keys.size()) << "opening read from the store";
    EXPECT_EQ(remote.size(), 50u);
    EXPECT_EQ(remote.shard_begins(), local.shard_begins());
    EXPECT_EQ(remote.info(), (stoke::ArrayInfo{stoke::DType::u8, {50, record_size}}));
    EXPECT_EQ(batches_of<std::uint8_t>(remote, 2), expected);
    EXPECT_GE(counting->reads.load(), 2 * record_keys.size());
  }
}

TEST(StoredRecords, AnObjectOfNoWholeNumberOfRecordsIsRefusedNamingItsUrlAndTheNumbers) {
  STOKE_REQUIRE_SERVERS();
  const auto http = std::make_shared<stoke::storage::HttpStore>(servers()["http"]);
  const std::string key = "records-cut/part.bin";
  const std::string url = servers()["http"] + "/" + key;
  put_records(key, 5 * record_size);
  const std::vector<stoke::StoredShard> shards =
      stoke::make_record_manifest(*http, {key}, record_size);
  const stoke::ShardedArrays<std::uint8_t> records(
      stoke::stored_shard_keys(shards), stoke::stored_records_format(http, shards, record_size),
      {.io_threads = 0});
  put_records(key, 5 * record_size - 3);  // cut after opening

  std::string what = record_refusal([&] { (void)records.get(0); });
  EXPECT_NE(what.find("record object " + url + " has 57 bytes; the manifest says 60"),
            std::string::npos)
      << what;
  what = record_refusal([&] { (void)stoke::make_record_manifest(*http, {key}, record_size); });
  EXPECT_NE(what.find("record object " + url +
                      " holds 57 bytes, not a multiple of the record size 12: remainder 9 bytes"),
            std::string::npos)
      << what;
  what = record_refusal([&] { (void)stoke::make_record_manifest(*http, {key}, 0); });
  EXPECT_NE(what.find("record size 0"), std::string::npos) << what;
}

TEST(StoredRecords, AManifestUnlikeTheObjectsIsRefusedNamingTheUrl) {
  STOKE_REQUIRE_SERVERS();
  const auto s3 =
      std::make_shared<stoke::storage::S3Store>(servers()["bucket"], servers().settings());
  std::vector<stoke::StoredShard> shards = stoke::make_record_manifest(
      stoke::storage::LocalStore(servers()["data"]), {record_keys[1]}, record_size);
  shards[0].bytes += record_size;  // the object holds 7 records, the manifest says 8
  shards[0].rows += 1;
  const stoke::ShardedArrays<std::uint8_t> records(
      stoke::stored_shard_keys(shards), stoke::stored_records_format(s3, shards, record_size),
      {.io_threads = 0});
  std::string what = record_refusal([&] { (void)records.get(0); });
  EXPECT_NE(what.find("record object s3://stoke/records/part-01.bin (" + servers()["s3"]),
            std::string::npos)
      << what;
  EXPECT_NE(what.find(" has 84 bytes; the manifest says 96"), std::string::npos) << what;

  // A manifest whose sizes are not its records' is refused at once.
  shards[0].bytes -= 1;
  what = record_refusal([&] { (void)stoke::stored_records_format(s3, shards, record_size); });
  EXPECT_NE(what.find("record object s3://stoke/records/part-01.bin"), std::string::npos) << what;
  EXPECT_NE(what.find("as the manifest says, holds 95 bytes, not a multiple of the record size 12"),
            std::string::npos)
      << what;
  shards[0].bytes += 1;
  shards[0].rows = 7;
  what = record_refusal([&] { (void)stoke::stored_records_format(s3, shards, record_size); });
  EXPECT_NE(what.find("the manifest says 96 bytes, 8 records of 12 bytes, and 7 rows"),
            std::string::npos)
      << what;
}

}  // namespace

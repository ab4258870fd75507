#pragma once
/// @file
/// Record files in a byte store (local, HTTP, S3): fixed-size records back to back, as
/// `MmapRecordDataset` reads from one local file, in several objects read as the shards of a
/// `ShardedArrays<std::uint8_t>` (`stored_records_format`), opened from a manifest of their
/// sizes (`make_record_manifest`, which asks the store for them and reads nothing).

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include <stoke/core/error.hpp>
#include <stoke/data/sources/array_shard.hpp>
#include <stoke/data/sources/sharded_arrays.hpp>
#include <stoke/data/sources/stored_arrays.hpp>
#include <stoke/data/sources/stored_shard.hpp>
#include <stoke/storage/byte_store.hpp>

namespace stoke {
namespace detail {

/// Throws `InputError` when `record_size` is 0 (`what` names the objects).
inline void check_record_size(std::size_t record_size, const std::string& what) {
  if (record_size == 0) {
    throw InputError("stoke: record size 0 for " + what + ": records must be at least 1 byte");
  }
}

/// Throws `InputError` naming the object `shown` and the numbers when `bytes` is not a whole
/// number of records of `record_size` bytes (`says` tells who says so: "" for the object).
inline void check_whole_records(std::uint64_t bytes, std::size_t record_size,
                                const std::string& shown, const std::string& says) {
  const std::uint64_t remainder = bytes % record_size;
  if (remainder != 0) {
    throw InputError("stoke: record object " + shown + says + " holds " + std::to_string(bytes) +
                     " bytes, not a multiple of the record size " + std::to_string(record_size) +
                     ": remainder " + std::to_string(remainder) +
                     " bytes, an incomplete last record at offset " +
                     std::to_string(bytes - remainder));
  }
}

}  // namespace detail

/// The manifest of the record objects `keys` of `store`, in this order, records of
/// `record_size` bytes: each object's size is asked from the store (`stat`, which reads none of
/// its bytes), its rows are its records. Throws `InputError` naming the object's URL and the
/// numbers when the record size is 0 or an object's size is not a whole number of records.
inline std::vector<StoredShard> make_record_manifest(const storage::ByteStore& store,
                                                     const std::vector<std::string>& keys,
                                                     std::size_t record_size) {
  detail::check_record_size(record_size, "the record objects of " + store.describe(""));
  std::vector<StoredShard> shards;
  for (const std::string& key : keys) {
    const std::uint64_t bytes = store.stat(key).size;
    detail::check_whole_records(bytes, record_size, store.describe(key), "");
    shards.push_back({key, static_cast<std::size_t>(bytes / record_size), bytes});
  }
  return shards;
}

/// How `ShardedArrays<std::uint8_t>` reads fixed-size records from the objects `shards` of
/// `store` (construct it with `stored_shard_keys(shards)`): each record is a row of
/// `record_size` bytes (`ArrayRow<std::uint8_t>`), viewed in the fetched object without a copy,
/// and the objects' records follow one another in this order, as `MmapRecordDataset` reads
/// those of one local file. No new machinery: a record object is a shard of `ShardedArrays`
/// of dtype `u8` and row shape `{record_size}`, read through the store as `stored_npy_format`
/// reads `.npy` shards (opening reads nothing; each object is fetched whole through the shard
/// cache when the epoch reaches it, its I/O threads fetching the next ones of the epoch's order
/// ahead). Throws `InputError` naming the object's URL and the numbers when the record size is
/// 0, or the manifest gives an object a size that is not its records (`rows * record_size`);
/// reading an object whose size is not the manifest's is an `InputError` naming its URL and both
/// sizes. A failed transfer is the store's `DataError`, naming the shard.
inline ArrayFileFormat stored_records_format(std::shared_ptr<const storage::ByteStore> store,
                                             const std::vector<StoredShard>& shards,
                                             std::size_t record_size) {
  detail::check_record_size(record_size, "the record objects of " + store->describe(""));
  for (const StoredShard& shard : shards) {
    const std::string shown = store->describe(shard.key);
    detail::check_whole_records(shard.bytes, record_size, shown, ", as the manifest says,");
    if (shard.bytes / record_size != shard.rows) {
      throw InputError(
          "stoke: record object " + shown + ": the manifest says " + std::to_string(shard.bytes) +
          " bytes, " + std::to_string(shard.bytes / record_size) + " records of " +
          std::to_string(record_size) + " bytes, and " + std::to_string(shard.rows) + " rows");
    }
  }
  auto read = [record_size](std::shared_ptr<const std::vector<std::byte>> bytes,
                            const std::filesystem::path& path) {
    const std::span<const std::byte> view(*bytes);
    return ArrayShard(path, ArrayInfo{DType::u8, {view.size() / record_size, record_size}}, view,
                      std::move(bytes));
  };
  const ArrayManifest manifest{DType::u8, {record_size}, shards};
  return detail::stored_array_format(std::move(store), manifest, "record", std::move(read));
}

}  // namespace stoke

#pragma once
/// @file
/// Shards named by URLs for `stoke_loader` (`s3://`, `http(s)://`, `file://`, paths): `.npy`
/// shards, one array of `.npz` shards, and record files, read by stoke's byte stores under
/// `ShardedArrays`, optionally through a node cache (the URLs resolved by `stored_objects.hpp`).

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <stoke/data/sources/npz.hpp>
#include <stoke/data/sources/stored_arrays.hpp>
#include <stoke/data/sources/stored_npz.hpp>
#include <stoke/data/sources/stored_records.hpp>

#include "array_files.hpp"
#include "stored_objects.hpp"

namespace stoke_python {

/// The column `name` over the `.npy` objects that `urls` name (see `open_stored_objects`), or,
/// with `member`, over the array `member` of `.npz` objects; with `manifest_url`, over the
/// shards of that manifest (`ArrayManifest::to_json`, of that array for `.npz` objects) in the
/// store of `urls[0]`, opened without reading a shard. Without a manifest every shard is read
/// once at open: a `.npy` shard for its header, a `.npz` one whole, its array checked
/// (CRC-32 included). With `cache_folder`, objects are read through a node cache of
/// `cache_bytes` there.
inline std::shared_ptr<Column> stored_shard_column(
    std::string name, const std::vector<std::string>& urls, const std::string& manifest_url,
    const std::string& member, std::size_t resident, std::size_t io_threads,
    const std::string& cache_folder, std::uint64_t cache_bytes) {
  const StoredObjects objects =
      open_stored_objects(urls, manifest_url, cache_folder, cache_bytes, "shards()");
  const stoke::ArrayManifest manifest =
      !manifest_url.empty()
          ? stoke::ArrayManifest::from_json(read_manifest(manifest_url, objects), manifest_url)
      : member.empty() ? stoke::make_npy_manifest(*objects.store, objects.keys)
                       : stoke::make_npz_manifest(*objects.store, objects.keys, member);
  return make_shard_column(std::move(name), manifest.keys(),
                           member.empty()
                               ? stoke::stored_npy_format(objects.store, manifest)
                               : stoke::stored_npz_format(objects.store, manifest, member),
                           {.resident = resident, .io_threads = io_threads});
}

/// The columns of the arrays `members` of the `.npz` objects that `urls` name (all the arrays
/// of the first object when `members` is empty), each named by its array, as `stored_shard_column`
/// makes one without a manifest, but with each object read whole once for all the arrays
/// (`make_npz_manifests`). With `cache_folder`, objects are read through a node cache of
/// `cache_bytes` there.
inline std::vector<std::pair<std::string, std::shared_ptr<Column>>> stored_npz_columns(
    const std::vector<std::string>& urls, std::vector<std::string> members, std::size_t resident,
    std::size_t io_threads, const std::string& cache_folder, std::uint64_t cache_bytes) {
  const StoredObjects objects =
      open_stored_objects(urls, "", cache_folder, cache_bytes, "shards()");
  if (members.empty() && !objects.keys.empty()) {
    const std::string& key = objects.keys.front();
    const std::vector<std::byte> bytes = objects.store->read(key);
    members = stoke::detail::npz_arrays(
        stoke::detail::open_npz(bytes, nullptr, "npz object " + objects.store->describe(key)));
  }
  const std::vector<stoke::ArrayManifest> manifests =
      stoke::make_npz_manifests(*objects.store, objects.keys, members);
  std::vector<std::pair<std::string, std::shared_ptr<Column>>> columns;
  for (std::size_t a = 0; a < members.size(); ++a) {
    columns.emplace_back(
        members[a],
        make_shard_column(members[a], manifests[a].keys(),
                          stoke::stored_npz_format(objects.store, manifests[a], members[a]),
                          {.resident = resident, .io_threads = io_threads}));
  }
  return columns;
}

/// The column `name` of fixed-size records of `dtype` and `row_shape` over the record objects
/// that `urls` name (see `open_stored_objects`), in order, their records following one another
/// as `MmapRecordDataset` reads those of one file: opened from `make_record_manifest` (a `stat`
/// of each object, which reads none of its bytes), each object fetched whole through
/// `stored_records_format` when the epoch reaches it. With `cache_folder`, objects are read
/// through a node cache of `cache_bytes` there.
inline std::shared_ptr<Column> stored_record_column(
    std::string name, const std::vector<std::string>& urls, nb::dlpack::dtype dtype,
    std::vector<std::size_t> row_shape, std::size_t resident, std::size_t io_threads,
    const std::string& cache_folder, std::uint64_t cache_bytes) {
  const StoredObjects objects =
      open_stored_objects(urls, "", cache_folder, cache_bytes, "records()");
  std::size_t record_size = dtype.bits / 8;
  for (const std::size_t extent : row_shape) record_size *= extent;
  const std::vector<stoke::StoredShard> shards =
      stoke::make_record_manifest(*objects.store, objects.keys, record_size);
  stoke::ShardedArrays<std::uint8_t> records(
      stoke::stored_shard_keys(shards),
      stoke::stored_records_format(objects.store, shards, record_size),
      {.resident = resident, .io_threads = io_threads});
  return std::make_shared<ShardColumn<std::uint8_t>>(std::move(name), dtype, std::move(row_shape),
                                                     std::move(records));
}

}  // namespace stoke_python

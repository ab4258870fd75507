#pragma once
/// @file
/// WebDataset tar shards named by URLs for `stoke_loader.tar_shards` (`s3://`, `http(s)://`,
/// `file://`): stoke's `images::StoredTarShards` over a byte store, optionally through a node
/// cache shared by the processes of a node.

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>
#include <stoke/data/sources/stored_shard.hpp>
#include <stoke/images/stored_tar_shards.hpp>
#include <stoke/images/tar_shards.hpp>

#include "stored_objects.hpp"

namespace stoke_python {

/// The tar shards the manifest at `url` lists: a list of `{"key", "rows", "bytes"}`
/// (`stoke::stored_shards_json`, rows being samples), or an object whose `"shards"` is one.
inline std::vector<stoke::StoredShard> tar_manifest(const std::string& url,
                                                    const StoredObjects& objects) {
  const nlohmann::json json = read_manifest(url, objects);
  const bool wrapped = json.is_object() && json.contains("shards");
  return stoke::stored_shards_from_json(wrapped ? json.at("shards") : json, url);
}

/// The samples of the tar shards that `urls` name (see `open_stored_objects`), or, with
/// `manifest_url`, of the shards that manifest lists in the store of `urls[0]`, opened without
/// reading a shard. Without a manifest every shard is read whole once at open, to count its
/// samples (through the node cache, when `cache_folder` names one, which then keeps it).
/// `resident` shards stay in memory, and `io_threads` fetch the epoch's next shards ahead.
inline stoke::images::StoredTarShards stored_tar_shards(
    const std::vector<std::string>& urls, const std::string& manifest_url, std::size_t resident,
    std::size_t io_threads, const std::string& cache_folder, std::uint64_t cache_bytes,
    stoke::images::TarShardsOptions options) {
  const StoredObjects objects =
      open_stored_objects(urls, manifest_url, cache_folder, cache_bytes, "tar_shards()");
  std::vector<stoke::StoredShard> manifest =
      manifest_url.empty() ? stoke::images::make_tar_manifest(*objects.store, objects.keys, options)
                           : tar_manifest(manifest_url, objects);
  return {objects.store,
          std::move(manifest),
          std::move(options),
          {.resident = resident, .io_threads = io_threads}};
}

}  // namespace stoke_python

#pragma once
/// @file
/// `.npy` shards named by URLs for `stoke_loader` (`s3://`, `http(s)://`, `file://`, paths):
/// stoke's byte stores under `ShardedArrays`, optionally through a node cache (the URLs resolved
/// by `stored_objects.hpp`).

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <stoke/data/sources/stored_arrays.hpp>

#include "array_files.hpp"
#include "stored_objects.hpp"

namespace stoke_python {

/// The column `name` over the `.npy` objects that `urls` name (see `open_stored_objects`), or,
/// with `manifest_url`, over the shards of that manifest (`ArrayManifest::to_json`) in the
/// store of `urls[0]`, opened without reading a shard. Without a manifest every shard is read
/// once at open, to read its header. With `cache_folder`, objects are read through a node
/// cache of `cache_bytes` there.
inline std::shared_ptr<Column> stored_shard_column(std::string name,
                                                   const std::vector<std::string>& urls,
                                                   const std::string& manifest_url,
                                                   std::size_t resident, std::size_t io_threads,
                                                   const std::string& cache_folder,
                                                   std::uint64_t cache_bytes) {
  const StoredObjects objects =
      open_stored_objects(urls, manifest_url, cache_folder, cache_bytes, "shards()");
  const stoke::ArrayManifest manifest =
      manifest_url.empty()
          ? stoke::make_npy_manifest(*objects.store, objects.keys)
          : stoke::ArrayManifest::from_json(read_manifest(manifest_url, objects), manifest_url);
  return make_shard_column(std::move(name), manifest.keys(),
                           stoke::stored_npy_format(objects.store, manifest),
                           {.resident = resident, .io_threads = io_threads});
}

}  // namespace stoke_python

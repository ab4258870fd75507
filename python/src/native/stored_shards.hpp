#pragma once
/// @file
/// `.npy` shards named by URLs for `stoke_loader` (`s3://`, `http(s)://`, `file://`, paths):
/// stoke's byte stores under `ShardedArrays`, optionally through a node cache.

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>
#include <stoke/core/error.hpp>
#include <stoke/data/sources/stored_arrays.hpp>
#include <stoke/storage/cached_store.hpp>
#include <stoke/storage/key_glob.hpp>
#include <stoke/storage/node_cache.hpp>
#include <stoke/storage/store_registry.hpp>
#if defined(STOKE_PYTHON_STORAGE)
#include <stoke/storage/remote/remote_stores.hpp>
#endif

#include "array_files.hpp"

namespace stoke_python {

/// Whether this build reads `http(s)://` and `s3://` URLs (libcurl was found when it was built).
inline constexpr bool has_remote_stores =
#if defined(STOKE_PYTHON_STORAGE)
    true;
#else
    false;
#endif

/// Registers the remote schemes with the process's store registry, once.
inline void register_stores_once() {
#if defined(STOKE_PYTHON_STORAGE)
  static std::once_flag once;
  std::call_once(once, [] { stoke::storage::register_remote_stores(); });
#endif
}

/// A data set's objects named by URLs: the store they are in (`inner`), the store to read them
/// through (`inner`, or a `CachedStore` over it and a node cache), and the keys the URLs list.
struct StoredObjects {
  std::shared_ptr<const stoke::storage::ByteStore> inner;  ///< the store of the URLs
  std::shared_ptr<const stoke::storage::ByteStore> store;  ///< `inner`, or through a node cache
  std::vector<std::string> keys;  ///< the objects listed (empty when a manifest lists them)
};

/// The objects that `urls` name (each a glob, a prefix ending in `/`, or one object; all in one
/// store), listed unless `manifest_url` names a manifest (then only the store of `urls[0]` is
/// opened). With `cache_folder`, they are read through a node cache of `cache_bytes` there.
/// `what` (`shards()`, `tar_shards()`) names the caller in errors.
inline StoredObjects open_stored_objects(const std::vector<std::string>& urls,
                                         const std::string& manifest_url,
                                         const std::string& cache_folder, std::uint64_t cache_bytes,
                                         const std::string& what) {
  if (urls.empty()) throw stoke::UsageError("stoke_loader: " + what + " needs at least one URL");
  register_stores_once();
  StoredObjects objects;
  if (manifest_url.empty()) {
    for (const std::string& url : urls) {
      stoke::storage::StoreObjects found = stoke::storage::list_url(url);
      if (objects.inner && found.store != objects.inner) {
        throw stoke::UsageError("stoke_loader: " + what + " reads URLs of one store: '" + url +
                                "' is not in the store of '" + urls.front() + "'");
      }
      objects.inner = found.store;
      for (const auto& object : found.objects) objects.keys.push_back(object.key);
    }
  } else {
    objects.inner = stoke::storage::open_url(urls.front()).store;
  }
  objects.store = objects.inner;
  if (!cache_folder.empty()) {
    objects.store = std::make_shared<stoke::storage::CachedStore>(
        objects.inner, std::make_shared<stoke::storage::NodeCache>(
                           stoke::storage::NodeCacheOptions{cache_folder, cache_bytes}));
  }
  return objects;
}

/// The JSON of the manifest at `url`, read through `objects.store` when it is in the store of
/// the objects (so that a node cache fetches it once per node), else from its own store.
inline nlohmann::json read_manifest(const std::string& url, const StoredObjects& objects) {
  const stoke::storage::StoreLocation location = stoke::storage::open_url(url);
  const std::vector<std::byte> bytes = location.store == objects.inner
                                           ? objects.store->read(location.key)
                                           : location.store->read(location.key);
  try {
    return nlohmann::json::parse(
        std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()));
  } catch (const nlohmann::json::exception& error) {
    throw stoke::InputError("stoke_loader: the manifest " + url + " is no JSON: " + error.what());
  }
}

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

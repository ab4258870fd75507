#pragma once
/// @file
/// Objects named by URLs for `stoke_loader`'s stored sources (`s3://`, `http(s)://`, `file://`,
/// paths): the store they are in, read directly or through a node cache shared by the processes
/// of a node, and the keys the URLs name. `.npy` and `.npz` shards, record files, tar shards and
/// token stores resolve their URLs here.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>
#include <stoke/core/error.hpp>
#include <stoke/storage/cached_store.hpp>
#include <stoke/storage/key_glob.hpp>
#include <stoke/storage/node_cache.hpp>
#include <stoke/storage/store_registry.hpp>
#if defined(STOKE_PYTHON_STORAGE)
#include <stoke/storage/remote/remote_stores.hpp>
#endif

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
/// through (`inner`, or a `CachedStore` over it and a node cache), and the keys the URLs name.
struct StoredObjects {
  std::shared_ptr<const stoke::storage::ByteStore> inner;  ///< the store of the URLs
  std::shared_ptr<const stoke::storage::ByteStore> store;  ///< `inner`, or through a node cache
  std::vector<std::string> keys;  ///< what the URLs name in it (empty when a manifest lists it)
};

/// The objects of `urls`, all in one store: `keys_of(location)` gives the keys that one URL,
/// resolved to its store and key (`StoreLocation`), names there, in order. With `cache_folder`
/// they are read through a node cache of `cache_bytes` there. Throws `UsageError` when there
/// is no URL or a URL is in another store than the first; `what` (`shards()`, ...) names the
/// caller in errors.
template <class KeysOf>
StoredObjects open_urls(const std::vector<std::string>& urls, KeysOf keys_of,
                        const std::string& cache_folder, std::uint64_t cache_bytes,
                        const std::string& what) {
  if (urls.empty()) throw stoke::UsageError("stoke_loader: " + what + " needs at least one URL");
  register_stores_once();
  StoredObjects objects;
  for (const std::string& url : urls) {
    const stoke::storage::StoreLocation location = stoke::storage::open_url(url);
    if (objects.inner && location.store != objects.inner) {
      throw stoke::UsageError("stoke_loader: " + what + " reads URLs of one store: '" + url +
                              "' is not in the store of '" + urls.front() + "'");
    }
    objects.inner = location.store;
    for (std::string& key : keys_of(location)) objects.keys.push_back(std::move(key));
  }
  objects.store = objects.inner;
  if (!cache_folder.empty()) {
    objects.store = std::make_shared<stoke::storage::CachedStore>(
        objects.inner, std::make_shared<stoke::storage::NodeCache>(
                           stoke::storage::NodeCacheOptions{cache_folder, cache_bytes}));
  }
  return objects;
}

/// The objects that `urls` name (each a glob, a prefix ending in `/`, or one object; all in one
/// store), listed unless `manifest_url` names a manifest (then only the store of `urls[0]` is
/// opened). With `cache_folder`, they are read through a node cache of `cache_bytes` there.
/// `what` (`shards()`, `records()`, `tar_shards()`) names the caller in errors.
inline StoredObjects open_stored_objects(const std::vector<std::string>& urls,
                                         const std::string& manifest_url,
                                         const std::string& cache_folder, std::uint64_t cache_bytes,
                                         const std::string& what) {
  if (!manifest_url.empty() && !urls.empty()) {
    return open_urls(
        {urls.front()},
        [](const stoke::storage::StoreLocation&) { return std::vector<std::string>{}; },
        cache_folder, cache_bytes, what);
  }
  return open_urls(
      urls,
      [](const stoke::storage::StoreLocation& location) {
        std::vector<std::string> keys;
        for (auto& object : stoke::storage::list_matching(*location.store, location.key))
          keys.push_back(std::move(object.key));
        return keys;
      },
      cache_folder, cache_bytes, what);
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

}  // namespace stoke_python

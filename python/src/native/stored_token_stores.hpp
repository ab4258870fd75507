#pragma once
/// @file
/// Token stores named by URLs for `stoke_loader.token_store` (`s3://`, `http(s)://`,
/// `file://`): stoke's `StoredTokenStore` over a byte store, optionally through a node cache
/// shared by the processes of a node, as a `TokenSource`.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <stoke/core/error.hpp>
#include <stoke/data/shard_cache.hpp>
#include <stoke/storage/key_glob.hpp>
#include <stoke/storage/store_registry.hpp>

#include "stored_objects.hpp"
#include "token_source.hpp"

namespace stoke_python {

/// The token stores that one URL, resolved to `location`, names in its store, as prefixes (keys
/// less `.idx` and `.bin`): for a glob or a key ending in `/`, the stores of every `.idx` object
/// it lists, in order of prefix (as a local folder's stores); else the one store its key names
/// (`corpus/part-0`, or that key's `.idx` or `.bin`). Throws `InputError` naming the URL when a
/// listing finds no `.idx` object.
inline std::vector<std::string> token_store_keys(const stoke::storage::StoreLocation& location) {
  const std::string& key = location.key;
  constexpr std::size_t extension = 4;  // ".idx", ".bin"
  if (stoke::storage::is_key_glob(key) || key.empty() || key.ends_with('/')) {
    std::vector<std::string> prefixes;
    for (const auto& object : stoke::storage::list_matching(*location.store, key)) {
      if (object.key.ends_with(".idx"))
        prefixes.push_back(object.key.substr(0, object.key.size() - extension));
    }
    if (prefixes.empty()) {
      throw stoke::InputError("stoke_loader: no token store (.idx) matches '" +
                              location.store->describe(key) + "'");
    }
    std::sort(prefixes.begin(), prefixes.end());
    return prefixes;
  }
  if (key.ends_with(".idx") || key.ends_with(".bin"))
    return {key.substr(0, key.size() - extension)};
  return {key};
}

/// The sequences of the token stores that `urls` name (see `token_store_keys`; all in one
/// store), in order, read as `stoke::StoredTokenStore` reads them: every index read and checked
/// at open, each `.bin` object fetched whole when the loader reaches it. `resident` `.bin`
/// objects stay in memory (0: all of them) and `io_threads` fetch them ahead. With
/// `cache_folder`, objects are read through a node cache of `cache_bytes` there.
inline TokenSource stored_token_source(const std::vector<std::string>& urls, std::size_t resident,
                                       std::size_t io_threads, const std::string& cache_folder,
                                       std::uint64_t cache_bytes) {
  const StoredObjects objects =
      open_urls(urls, token_store_keys, cache_folder, cache_bytes, "token_store()");
  const std::size_t stores = objects.keys.size();
  return {objects.store, objects.keys,
          stoke::ShardCacheOptions{.resident = resident == 0 ? stores : resident,
                                   .io_threads = io_threads}};
}

}  // namespace stoke_python

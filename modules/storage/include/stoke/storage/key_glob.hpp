#pragma once
/// @file
/// Many shards by one name: the objects of a store whose keys match a glob or a prefix.

#include <fnmatch.h>

#include <memory>

#include <string>
#include <string_view>
#include <vector>

#include <stoke/core/error.hpp>
#include <stoke/storage/byte_store.hpp>
#include <stoke/storage/store_registry.hpp>

namespace stoke::storage {

/// Whether `pattern` has a glob character (`*`, `?` or `[`).
[[nodiscard]] inline bool is_key_glob(std::string_view pattern) {
  return pattern.find_first_of("*?[") != std::string_view::npos;
}

/// The objects of `store` whose keys match `pattern`, sorted by key. A glob (`*` and `?` match
/// within one `/`-separated part, `[abc]` one of the characters) lists the prefix before its
/// first glob character and keeps the matches; a key ending in `/` is every object under it;
/// any other key is that one object (`stat`). Throws `InputError` naming the pattern when
/// nothing matches.
[[nodiscard]] inline std::vector<ObjectInfo> list_matching(const ByteStore& store,
                                                           std::string_view pattern) {
  std::vector<ObjectInfo> found;
  if (is_key_glob(pattern)) {
    const std::string glob(pattern);
    for (ObjectInfo& object : store.list(pattern.substr(0, pattern.find_first_of("*?[")))) {
      if (::fnmatch(glob.c_str(), object.key.c_str(), FNM_PATHNAME) == 0) {
        found.push_back(std::move(object));
      }
    }
  } else if (pattern.empty() || pattern.ends_with('/')) {
    found = store.list(pattern);
  } else {
    found.push_back(store.stat(pattern));
  }
  if (found.empty()) {
    throw InputError("stoke: no object matches '" + store.describe(pattern) + "'");
  }
  return found;
}

/// The objects a URL names (a glob, a prefix ending in `/`, or one object) and their store.
struct StoreObjects {
  std::shared_ptr<const ByteStore> store{};  ///< the store that holds them
  std::vector<ObjectInfo> objects{};         ///< sorted by key
};

/// `list_matching` of the store and key `open_url(url)` resolves.
[[nodiscard]] inline StoreObjects list_url(std::string_view url) {
  StoreLocation location = open_url(url);
  std::vector<ObjectInfo> objects = list_matching(*location.store, location.key);
  return {std::move(location.store), std::move(objects)};
}

}  // namespace stoke::storage

#pragma once
/// @file
/// `StoreRegistry`: which `ByteStore` serves a URL's scheme, with `file` built in and a user's
/// own schemes added at run time; `open_url` resolves a URL to a store and a key.

#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>

#include <stoke/core/error.hpp>
#include <stoke/storage/byte_store.hpp>
#include <stoke/storage/local_store.hpp>
#include <stoke/storage/storage_url.hpp>

namespace stoke::storage {

/// A URL resolved: the store that holds it and the key (or key prefix, or glob) inside it.
struct StoreLocation {
  std::shared_ptr<const ByteStore> store{};  ///< the store of the URL's scheme and authority
  std::string key{};                         ///< the URL's path inside that store
};

/// Makes the store of one URL (its scheme's stores take the authority from it).
using StoreOpener = std::function<StoreLocation(const StorageUrl&)>;

/// The schemes stoke can read and the opener of each. `file` (and plain paths) is built in;
/// `stoke::storage`'s `register_remote_stores` adds `http`, `https` and `s3`; `add` adds a
/// user's own. Safe to use from several threads.
class StoreRegistry {
 public:
  /// A registry that knows `file` only.
  StoreRegistry() { add("file", open_file); }

  /// Serves `scheme` (lower case) with `opener`, replacing what served it before.
  void add(std::string scheme, StoreOpener opener) {
    const std::lock_guard lock(mutex_);
    openers_[std::move(scheme)] = std::move(opener);
  }

  /// Whether `scheme` is served.
  [[nodiscard]] bool has(std::string_view scheme) const {
    const std::lock_guard lock(mutex_);
    return openers_.contains(std::string(scheme));
  }

  /// The store and key of `url`; throws `UsageError` naming the scheme and those known when
  /// no store serves it.
  [[nodiscard]] StoreLocation open(std::string_view url) const {
    const StorageUrl parsed = StorageUrl::parse(url);
    StoreOpener opener;
    {
      const std::lock_guard lock(mutex_);
      const auto it = openers_.find(parsed.scheme);
      if (it == openers_.end()) {
        std::string known;
        for (const auto& [scheme, unused] : openers_) known += (known.empty() ? "" : ", ") + scheme;
        throw UsageError("stoke: no byte store serves scheme '" + parsed.scheme + "' (of '" +
                         parsed.scheme + "://" + parsed.authority +
                         "/...'); known schemes: " + known);
      }
      opener = it->second;
    }
    return opener(parsed);
  }

 private:
  /// A path: absolute ones are keys of a store rooted at "/", relative ones of the current folder.
  static StoreLocation open_file(const StorageUrl& url) {
    const std::filesystem::path path(url.path);
    if (path.is_absolute()) {
      return {std::make_shared<LocalStore>("/"), path.relative_path().generic_string()};
    }
    return {std::make_shared<LocalStore>(std::filesystem::current_path()), url.path};
  }

  mutable std::mutex mutex_;
  std::map<std::string, StoreOpener, std::less<>> openers_;
};

/// The registry `open_url` uses, shared by the process.
inline StoreRegistry& store_registry() {
  static StoreRegistry registry;
  return registry;
}

/// The store and key of `url` in `store_registry()`.
inline StoreLocation open_url(std::string_view url) {
  return store_registry().open(url);
}

}  // namespace stoke::storage

#pragma once
/// @file
/// `register_remote_stores`: `http://`, `https://` and `s3://` URLs in a `StoreRegistry`.

#include <map>
#include <memory>
#include <mutex>
#include <string>

#include <stoke/storage/remote/aws_settings.hpp>
#include <stoke/storage/remote/http_store.hpp>
#include <stoke/storage/remote/s3_store.hpp>
#include <stoke/storage/remote/transfer_options.hpp>
#include <stoke/storage/store_registry.hpp>

namespace stoke::storage {

/// Serves `http`, `https` and `s3` in `registry` (by default the one `open_url` uses), each
/// store transferring with `options`. `http(s)://host[:port]/key` reads `key` from an
/// `HttpStore` of `http(s)://host[:port]`; `s3://bucket/key` reads `key` from an `S3Store` of
/// `bucket` with `AwsSettings::from_environment()` (read when such a URL is first opened).
/// One store per scheme and authority is made and then shared, with its I/O threads.
inline void register_remote_stores(StoreRegistry& registry = store_registry(),
                                   TransferOptions options = {}) {
  struct Opened {
    std::mutex mutex;
    std::map<std::string, std::shared_ptr<const ByteStore>> stores;
  };
  auto opened = std::make_shared<Opened>();
  const auto shared = [opened](const std::string& name, const auto& make) {
    const std::lock_guard lock(opened->mutex);
    auto& store = opened->stores[name];
    if (!store) store = make();
    return store;
  };
  const auto open_http = [shared, options](const StorageUrl& url) {
    const std::string base = url.scheme + "://" + url.authority;
    return StoreLocation{shared(base, [&] { return std::make_shared<HttpStore>(base, options); }),
                         url.path};
  };
  registry.add("http", open_http);
  registry.add("https", open_http);
  registry.add("s3", [shared, options](const StorageUrl& url) {
    return StoreLocation{shared("s3://" + url.authority,
                                [&] {
                                  return std::make_shared<S3Store>(
                                      url.authority, AwsSettings::from_environment(), options);
                                }),
                         url.path};
  });
}

}  // namespace stoke::storage

#pragma once
/// @file
/// `HttpStore`: objects served over HTTP(S) under a base URL, read by ranged GETs.

#include <string>
#include <string_view>
#include <vector>

#include <stoke/core/error.hpp>
#include <stoke/storage/remote/detail/uri_encode.hpp>
#include <stoke/storage/remote/remote_store.hpp>

namespace stoke::storage {

/// The objects under `base` (`https://host:port/datasets`): key `train/a.tar` is
/// `<base>/train/a.tar`, its path percent-encoded. The server must answer `HEAD` with a
/// `Content-Length` and `Range` requests with 206 (or 200 with a `Content-Range`). HTTP has
/// no listing: `list` throws `UsageError` (name the shards, or read them from a manifest).
/// Credentials in the base URL (`user:password@`) are refused: they would show in messages.
class HttpStore final : public RemoteStore {
 public:
  /// The objects under `base`, transferred with `options`.
  explicit HttpStore(std::string base, TransferOptions options = {})
      : RemoteStore(options), base_(std::move(base)) {
    while (base_.ends_with('/')) base_.pop_back();
    const auto authority = base_.find("://");
    if (authority == std::string::npos ||
        base_.find('@', authority) < base_.find('/', authority + 3)) {
      throw UsageError(
          "stoke: HttpStore wants 'http(s)://host[:port][/path]' without "
          "credentials, not '" +
          std::string(base_.substr(0, authority)) + "://...'");
    }
  }

  std::vector<ObjectInfo> list(std::string_view prefix) const override {
    throw UsageError("stoke: HTTP has no listing (of '" + describe(prefix) +
                     "'): name the shards one by one, or read them from a manifest");
  }

 protected:
  detail::RemoteObject remote_object(std::string_view key) const override {
    detail::RemoteObject object;
    object.request.url = base_ + "/" + detail::uri_encode(key, true);
    object.shown = object.request.url;
    return object;
  }

 private:
  std::string base_;
};

}  // namespace stoke::storage

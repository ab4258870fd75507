#pragma once
/// @file
/// `StorageUrl`: a URL or a plain path split into scheme, authority and path.

#include <string>
#include <string_view>

#include <stoke/core/error.hpp>

namespace stoke::storage {

/// A URL split at its scheme and authority: `s3://bucket/train/a.tar` is scheme `s3`,
/// authority `bucket`, path `train/a.tar`; `http://host:8080/x/y` is `http`, `host:8080`,
/// `x/y`. A plain path (no `scheme://`) is scheme `file` with the path as given;
/// `file:///data/x` is scheme `file`, path `/data/x`. The path of a URL with an authority has no
/// leading `/`.
struct StorageUrl {
  std::string scheme{};     ///< lower case: "file", "http", "https", "s3", or a user's own
  std::string authority{};  ///< host[:port] or bucket; empty for files
  std::string path{};       ///< the key (or file path) inside the authority

  /// Splits `url`; throws `UsageError` for an empty one or an empty scheme ("://x").
  static StorageUrl parse(std::string_view url) {
    if (url.empty()) throw UsageError("stoke: an empty storage URL");
    const auto separator = url.find("://");
    if (separator == std::string_view::npos) return {"file", "", std::string(url)};
    if (separator == 0) {
      throw UsageError("stoke: storage URL '" + std::string(url) + "' has no scheme");
    }
    StorageUrl parsed;
    for (const char c : url.substr(0, separator)) {
      parsed.scheme += static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
    }
    const std::string_view rest = url.substr(separator + 3);
    if (parsed.scheme == "file") {
      parsed.path = std::string(rest);
      return parsed;
    }
    const auto slash = rest.find('/');
    parsed.authority = std::string(rest.substr(0, slash));
    if (slash != std::string_view::npos) parsed.path = std::string(rest.substr(slash + 1));
    return parsed;
  }
};

}  // namespace stoke::storage

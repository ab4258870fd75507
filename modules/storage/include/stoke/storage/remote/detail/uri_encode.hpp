#pragma once
/// @file
/// Percent-encoding as SigV4's canonical request wants it (RFC 3986: letters, digits and
/// `-._~` kept, every other byte `%XX` in upper-case hex), with `/` kept in a path.

#include <string>
#include <string_view>

namespace stoke::storage::detail {

/// `text` percent-encoded; `/` kept when `keep_slash` (a path), encoded otherwise (a query value).
inline std::string uri_encode(std::string_view text, bool keep_slash) {
  static constexpr char hex[] = "0123456789ABCDEF";
  std::string encoded;
  encoded.reserve(text.size());
  for (const char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    const bool unreserved = (byte >= 'A' && byte <= 'Z') || (byte >= 'a' && byte <= 'z') ||
                            (byte >= '0' && byte <= '9') || byte == '-' || byte == '.' ||
                            byte == '_' || byte == '~' || (keep_slash && byte == '/');
    if (unreserved) {
      encoded += c;
    } else {
      encoded += '%';
      encoded += hex[byte >> 4];
      encoded += hex[byte & 15];
    }
  }
  return encoded;
}

}  // namespace stoke::storage::detail

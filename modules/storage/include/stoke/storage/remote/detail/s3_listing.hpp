#pragma once
/// @file
/// One page of an S3 ListObjectsV2 answer, read from its XML. The answer is a flat, fixed
/// schema (`<Contents>` with `<Key>`, `<Size>`, `<ETag>`; `<IsTruncated>`,
/// `<NextContinuationToken>`), so a few lines read it and stoke needs no XML library.

#include <cstdint>
#include <string>
#include <vector>

#include <stoke/core/error.hpp>
#include <stoke/storage/object_info.hpp>
#include <stoke/storage/remote/detail/ranged_get.hpp>

namespace stoke::storage::detail {

/// The objects of one page and the token of the next (empty on the last page).
struct S3ListingPage {
  std::vector<ObjectInfo> objects{};  ///< in the server's (key) order
  std::string next_token{};           ///< NextContinuationToken, when IsTruncated
};

/// `text` with XML's character references replaced (`&amp;`, `&lt;`, `&gt;`, `&quot;`,
/// `&apos;`, `&#NN;`, `&#xNN;` for ASCII).
inline std::string xml_unescape(const std::string& text) {
  std::string plain;
  plain.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    const auto semicolon = text.find(';', i);
    if (text[i] != '&' || semicolon == std::string::npos) {
      plain += text[i];
      continue;
    }
    const std::string name = text.substr(i + 1, semicolon - i - 1);
    if (name == "amp")
      plain += '&';
    else if (name == "lt")
      plain += '<';
    else if (name == "gt")
      plain += '>';
    else if (name == "quot")
      plain += '"';
    else if (name == "apos")
      plain += '\'';
    else if (name.starts_with("#x"))
      plain += static_cast<char>(std::stoi(name.substr(2), nullptr, 16));
    else if (name.starts_with("#"))
      plain += static_cast<char>(std::stoi(name.substr(1)));
    else
      plain += text.substr(i, semicolon - i + 1);
    i = semicolon;
  }
  return plain;
}

/// The page in `xml`, answered for `shown` (named when the answer is not a listing).
inline S3ListingPage parse_s3_listing(const std::string& xml, const std::string& shown) {
  if (xml.find("<ListBucketResult") == std::string::npos) {
    throw InputError("stoke: the listing of " + shown + " is not a ListBucketResult: '" +
                     xml.substr(0, 200) + "'");
  }
  S3ListingPage page;
  for (std::size_t at = xml.find("<Contents>"); at != std::string::npos;
       at = xml.find("<Contents>", at + 1)) {
    const std::string entry = xml.substr(at, xml.find("</Contents>", at) - at);
    const std::string size = xml_text(entry, "Size");
    if (size.empty() || size.find_first_not_of("0123456789") != std::string::npos) {
      throw InputError("stoke: the listing of " + shown + " has an entry without a size");
    }
    page.objects.push_back({xml_unescape(xml_text(entry, "Key")), std::stoull(size),
                            bare_etag(xml_unescape(xml_text(entry, "ETag")))});
  }
  if (xml_text(xml, "IsTruncated") == "true") {
    page.next_token = xml_unescape(xml_text(xml, "NextContinuationToken"));
    if (page.next_token.empty()) {
      throw InputError("stoke: the listing of " + shown +
                       " is truncated but has no NextContinuationToken");
    }
  }
  return page;
}

}  // namespace stoke::storage::detail

#pragma once
/// @file
/// `S3Store`: the objects of an S3 bucket (AWS, or any server that speaks S3), signed with
/// SigV4, listed with ListObjectsV2 and read by parallel ranged GETs.
///
/// Signing is libcurl's (`CURLOPT_AWS_SIGV4`, libcurl >= 7.75): Debian packages libcurl and no
/// AWS SDK, and libcurl already carries the transfers (connection reuse, TLS, timeouts). What
/// libcurl 7.88 signs and what stoke adds so that real servers accept it (checked against
/// SeaweedFS, which verifies signatures):
/// - libcurl signs the method, the path as given, the query as given, the `host` and
///   `x-amz-date` headers and every `x-amz-*` header the request carries. It does not add
///   `x-amz-content-sha256`, which S3 requires: stoke sends it (the SHA-256 of the empty body of
///   a GET or HEAD), so it is signed too; so is `x-amz-security-token` (a session token).
///   (SeaweedFS accepts requests without it; the tests' proxy refuses them, as AWS does.)
/// - libcurl 7.88 neither sorts nor encodes the query: stoke builds every query already
///   canonical (parameters sorted by name, names and values RFC 3986 encoded) and encodes the
///   path the same way (`/` kept), so the request sent is the request signed.

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include <stoke/core/error.hpp>
#include <stoke/storage/remote/aws_settings.hpp>
#include <stoke/storage/remote/detail/s3_listing.hpp>
#include <stoke/storage/remote/detail/uri_encode.hpp>
#include <stoke/storage/remote/remote_store.hpp>

namespace stoke::storage {

/// The objects of `bucket`, with `settings`' credentials, region and endpoint.
class S3Store final : public RemoteStore {
 public:
  /// SHA-256 of the empty payload: the `x-amz-content-sha256` of a GET or HEAD.
  static constexpr std::string_view empty_payload_sha256 =
      "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

  /// The objects of `bucket` as `settings` reach them, transferred with `options`;
  /// `list_page_size` keys per ListObjectsV2 page (at most 1000).
  S3Store(std::string bucket, AwsSettings settings, TransferOptions options = {},
          std::size_t list_page_size = 1000)
      : RemoteStore(options),
        bucket_(std::move(bucket)),
        settings_(std::move(settings)),
        page_size_(list_page_size) {
    if (bucket_.empty()) throw UsageError("stoke: S3Store needs a bucket");
    if (page_size_ == 0 || page_size_ > 1000) {
      throw UsageError("stoke: S3Store's list_page_size must be 1 to 1000, not " +
                       std::to_string(page_size_));
    }
    signing_.provider = "aws:amz:" + settings_.region + ":s3";
    signing_.access_key = settings_.access_key_id;
    signing_.secret_key = settings_.secret_access_key;
    while (settings_.endpoint.ends_with('/')) settings_.endpoint.pop_back();
    bucket_url_ = settings_.endpoint.empty()
                      ? "https://" + bucket_ + ".s3." + settings_.region + ".amazonaws.com"
                      : settings_.endpoint + "/" + detail::uri_encode(bucket_, false);
  }

  /// The bucket.
  [[nodiscard]] const std::string& bucket() const noexcept { return bucket_; }

  /// Every object under `prefix`, page after page (continuation tokens), sorted by key.
  std::vector<ObjectInfo> list(std::string_view prefix) const override {
    std::vector<ObjectInfo> objects;
    std::string token;
    do {
      // The parameters in canonical order (sorted by name), each encoded.
      std::string query;
      if (!token.empty()) query += "continuation-token=" + detail::uri_encode(token, false) + "&";
      query += "list-type=2&max-keys=" + std::to_string(page_size_) +
               "&prefix=" + detail::uri_encode(prefix, false);
      detail::RemoteObject page_request = signed_request(bucket_url_ + "/?" + query);
      page_request.shown = describe(prefix) + " (listing)";
      detail::CurlResponse response;
      run_on_io_thread([&](detail::CurlEasy& easy, std::mt19937_64& random) {
        response = detail::retried_request(easy, page_request, options(), {}, random);
      });
      detail::S3ListingPage page = detail::parse_s3_listing(response.text, page_request.shown);
      objects.insert(objects.end(), page.objects.begin(), page.objects.end());
      token = std::move(page.next_token);
    } while (!token.empty());
    return objects;
  }

 protected:
  detail::RemoteObject remote_object(std::string_view key) const override {
    detail::RemoteObject object = signed_request(bucket_url_ + "/" + detail::uri_encode(key, true));
    object.shown = "s3://" + bucket_ + "/" + std::string(key) + " (" + object.request.url + ")";
    return object;
  }

 private:
  detail::RemoteObject signed_request(std::string url) const {
    detail::RemoteObject object;
    object.request.url = std::move(url);
    object.request.headers.push_back("x-amz-content-sha256: " + std::string(empty_payload_sha256));
    if (!settings_.session_token.empty()) {
      object.request.headers.push_back("x-amz-security-token: " + settings_.session_token);
    }
    object.request.signing = &signing_;
    return object;
  }

  std::string bucket_;
  AwsSettings settings_;
  std::size_t page_size_;
  detail::SigV4 signing_;
  std::string bucket_url_;
};

}  // namespace stoke::storage

#pragma once
/// @file
/// A byte range of a remote object, fetched with retries: each attempt asks for the bytes not
/// yet received (a cut body resumes by range), every response is checked (status, the range's
/// start, the object's ETag) before its bytes count, and a range that fails after the retries
/// is a `DataError` naming the URL (without credentials), the shard, the epoch and the step.

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <random>
#include <span>
#include <string>
#include <thread>

#include <stoke/core/error.hpp>
#include <stoke/storage/object_info.hpp>
#include <stoke/storage/remote/detail/curl_request.hpp>
#include <stoke/storage/remote/transfer_options.hpp>

namespace stoke::storage::detail {

/// A remote object as the fetches see it: the request that reads it (URL, headers, signing),
/// the URL messages name, and the ETag every response must carry (empty: not checked).
struct RemoteObject {
  CurlRequest request{};  ///< method GET, no range
  std::string shown{};    ///< the URL without credentials
  std::string etag{};     ///< the ETag the object had when it was sized
};

/// The text between `<tag>` and `</tag>` in `xml`, or "" (S3's error `<Code>`).
inline std::string xml_text(const std::string& xml, const std::string& tag) {
  const auto open = xml.find("<" + tag + ">");
  if (open == std::string::npos) return {};
  const auto begin = open + tag.size() + 2;
  const auto close = xml.find("</" + tag + ">", begin);
  return close == std::string::npos ? std::string() : xml.substr(begin, close - begin);
}

/// An ETag without its quotes and weak prefix.
inline std::string bare_etag(std::string etag) {
  if (etag.starts_with("W/")) etag.erase(0, 2);
  if (etag.size() >= 2 && etag.front() == '"' && etag.back() == '"') {
    etag = etag.substr(1, etag.size() - 2);
  }
  return etag;
}

/// Why a response cannot be used, for a message: the transport's error or the status with the
/// server's error code.
inline std::string failure_reason(const CurlResponse& response, const TransferOptions& options) {
  if (response.code == CURLE_ABORTED_BY_CALLBACK) {
    return "no byte received for " + std::to_string(options.stall_timeout.count()) + " ms";
  }
  if (response.code != CURLE_OK) return response.transport_error;
  std::string reason = "HTTP " + std::to_string(response.status);
  if (const std::string code = xml_text(response.text, "Code"); !code.empty()) {
    reason += " (" + code + ")";
  }
  return reason;
}

/// Whether a failed response may succeed when asked again: a transport failure (timeout,
/// reset, refused connection, a body cut short), a 5xx (503 SlowDown among them), 429 or 408.
inline bool is_retryable(const CurlResponse& response) {
  if (response.code != CURLE_OK) return response.code != CURLE_WRITE_ERROR;
  return response.status >= 500 || response.status == 429 || response.status == 408;
}

/// The `DataError` of a fetch that failed: its context names the shard, epoch, step and URL.
[[noreturn]] inline void throw_fetch_error(const RemoteObject& object, const FetchContext& context,
                                           const std::string& what) {
  throw DataError(DataErrorContext{.epoch = context.epoch,
                                   .step = context.step,
                                   .index = context.shard,
                                   .worker = "I/O thread",
                                   .device = "",
                                   .url = object.shown,
                                   .activity = "fetch"},
                  what);
}

/// Checks a successful response to a range asked from `begin`: the status, the start of its
/// `Content-Range`, and its ETag against the object's. Returns "" or what is wrong.
inline std::string response_mismatch(const CurlResponse& response, const RemoteObject& object,
                                     std::uint64_t begin) {
  const std::string content_range = response.header("content-range");
  if (response.status == 206 || !content_range.empty()) {
    const auto space = content_range.find(' ');
    const std::string start = content_range.substr(space + 1, content_range.find('-') - space - 1);
    if (start != std::to_string(begin)) {
      return "the server answered the range from " + std::to_string(begin) + " with '" +
             content_range + "'";
    }
  } else if (response.status == 200 && begin != 0) {
    return "the server ignored the Range header (HTTP 200 without Content-Range)";
  } else if (response.status != 200) {
    return "unexpected HTTP " + std::to_string(response.status);
  }
  const std::string etag = bare_etag(response.header("etag"));
  if (!object.etag.empty() && !etag.empty() && etag != object.etag) {
    return "the object changed while read (ETag '" + etag + "', was '" + object.etag + "')";
  }
  return {};
}

/// Fetches bytes `[begin, begin + into.size())` of `object` into `into` on `easy`, retrying
/// with `options.retry`: each attempt asks for the bytes still missing, an attempt that
/// brought bytes restarts the count of failures, and `random` draws the backoff's jitter.
template <class Generator>
void get_range(CurlEasy& easy, const RemoteObject& object, std::uint64_t begin,
               std::span<std::byte> into, const TransferOptions& options,
               const FetchContext& context, Generator& random) {
  const std::uint64_t end = begin + into.size();
  std::uint64_t filled = 0;
  std::size_t failures = 0;
  std::size_t requests = 0;
  std::string last_reason;
  while (filled < into.size()) {
    if (failures == std::max<std::size_t>(options.retry.attempts, 1)) {
      throw_fetch_error(object, context,
                        "GET bytes " + std::to_string(begin) + "-" + std::to_string(end - 1) +
                            " failed " + std::to_string(failures) + " times in a row (" +
                            std::to_string(requests) + " requests): last: " + last_reason);
    }
    if (failures > 0) std::this_thread::sleep_for(options.retry.delay(failures - 1, random));
    CurlRequest request = object.request;
    request.range_begin = begin + filled;
    request.range_end = end;
    const CurlResponse response = perform(easy, request, {into.subspan(filled)}, options);
    ++requests;
    const bool answered = response.status == 200 || response.status == 206;
    if (answered) {
      if (const std::string wrong = response_mismatch(response, object, begin + filled);
          !wrong.empty()) {
        throw_fetch_error(object, context,
                          "GET bytes from " + std::to_string(begin + filled) + ": " + wrong);
      }
    } else if (response.code == CURLE_OK && response.status == 404) {
      throw InputError("stoke: no object at " + object.shown + " (HTTP 404)");
    } else if (response.code == CURLE_OK && !is_retryable(response)) {
      throw_fetch_error(object, context,
                        "GET bytes from " + std::to_string(begin + filled) + ": " +
                            failure_reason(response, options));
    }
    const std::uint64_t got = answered ? response.body_bytes : 0;
    filled += got;
    if (response.code == CURLE_WRITE_ERROR) {
      throw_fetch_error(object, context,
                        "GET bytes from " + std::to_string(begin + filled) +
                            ": the server sent more bytes than asked");
    }
    if (response.code == CURLE_OK && answered && filled < into.size() && got > 0) {
      continue;  // a short but complete answer: ask for the rest
    }
    if (filled < into.size()) {
      last_reason = response.code == CURLE_OK && answered
                        ? "the body ended after " + std::to_string(got) + " bytes"
                        : failure_reason(response, options);
      failures = got > 0 ? 1 : failures + 1;
    }
  }
}

}  // namespace stoke::storage::detail

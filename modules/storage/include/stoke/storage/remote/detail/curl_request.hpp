#pragma once
/// @file
/// One HTTP request through a libcurl easy handle: its deadlines, its optional SigV4 signing,
/// its response headers, and a body written into a caller's buffer (a ranged part) or a string.

#include <curl/curl.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <map>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <stoke/core/error.hpp>
#include <stoke/storage/remote/transfer_options.hpp>

namespace stoke::storage::detail {

/// libcurl's global state, set up once per process before the first handle.
inline void curl_global_once() {
  static std::once_flag once;
  std::call_once(once, [] {
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
      throw Error("stoke: libcurl could not be initialised (curl_global_init)");
    }
  });
}

/// An easy handle, owned; kept by one I/O thread so its connections are reused.
class CurlEasy {
 public:
  CurlEasy() {
    curl_global_once();
    handle_ = curl_easy_init();
    if (handle_ == nullptr) throw Error("stoke: libcurl could not make a handle");
  }
  CurlEasy(const CurlEasy&) = delete;
  CurlEasy& operator=(const CurlEasy&) = delete;
  ~CurlEasy() { curl_easy_cleanup(handle_); }

  /// The handle.
  [[nodiscard]] CURL* get() const noexcept { return handle_; }

 private:
  CURL* handle_ = nullptr;
};

/// SigV4 signing by libcurl (`CURLOPT_AWS_SIGV4`): the provider string and the key pair.
struct SigV4 {
  std::string provider{};    ///< "aws:amz:<region>:s3"
  std::string access_key{};  ///< CURLOPT_USERNAME
  std::string secret_key{};  ///< CURLOPT_PASSWORD, never printed
};

/// A request: method, URL (already encoded, query already canonical), headers, an optional
/// byte range and the signing.
struct CurlRequest {
  std::string method = "GET";                  ///< "GET" or "HEAD"
  std::string url{};                           ///< without credentials
  std::vector<std::string> headers{};          ///< "Name: value"
  std::optional<std::uint64_t> range_begin{};  ///< asks for bytes from here...
  std::uint64_t range_end = 0;                 ///< ...to here (exclusive)
  const SigV4* signing = nullptr;              ///< signs the request when set
};

/// What came back: the transport's result, the status and the headers of the final response
/// (names in lower case), and how many body bytes went into the buffer.
struct CurlResponse {
  CURLcode code = CURLE_OK;                      ///< the transport's result
  std::string transport_error{};                 ///< libcurl's message when `code` is not OK
  long status = 0;                               ///< HTTP status of the final response
  std::map<std::string, std::string> headers{};  ///< lower-case name -> value
  std::uint64_t body_bytes = 0;                  ///< body bytes written into the sink's buffer
  std::string text{};                            ///< the body without a buffer, or an error's body

  /// A header's value, or "".
  [[nodiscard]] std::string header(const std::string& name) const {
    const auto it = headers.find(name);
    return it == headers.end() ? std::string() : it->second;
  }
};

/// Where a successful body goes: into `buffer` from its start (refusing more than it holds), or,
/// when `buffer` has no data, appended to the response's text.
struct BodySink {
  std::span<std::byte> buffer{};  ///< the part's bytes still to be filled
};

/// Performs `request` on `easy` with `options`' deadlines, the body going to `sink`. Never
/// throws for a failed transfer: the caller reads `code` and `status` and decides to retry.
inline CurlResponse perform(CurlEasy& easy, const CurlRequest& request, BodySink sink,
                            const TransferOptions& options) {
  struct State {
    CurlResponse response;
    BodySink sink;
    std::chrono::steady_clock::time_point last_progress;
    curl_off_t last_bytes = 0;
    std::chrono::milliseconds stall{};
    CURL* curl = nullptr;
  } state{{}, sink, std::chrono::steady_clock::now(), 0, options.stall_timeout, easy.get()};

  CURL* curl = easy.get();
  curl_easy_reset(curl);
  const auto on_header = +[](char* data, std::size_t size, std::size_t count, void* user) {
    auto& s = *static_cast<State*>(user);
    std::string line(data, size * count);
    while (!line.empty() && (line.back() == '\r' || line.back() == '\n')) line.pop_back();
    if (line.starts_with("HTTP/")) {
      s.response.headers.clear();  // a new response (after 100 Continue or a redirect)
    } else if (const auto colon = line.find(':'); colon != std::string::npos) {
      std::string name = line.substr(0, colon);
      std::ranges::transform(name, name.begin(), [](unsigned char c) { return std::tolower(c); });
      const auto value = line.find_first_not_of(' ', colon + 1);
      s.response.headers[name] = value == std::string::npos ? "" : line.substr(value);
    }
    return size * count;
  };
  const auto on_body = +[](char* data, std::size_t size, std::size_t count, void* user) {
    auto& s = *static_cast<State*>(user);
    const std::size_t bytes = size * count;
    long status = 0;
    curl_easy_getinfo(s.curl, CURLINFO_RESPONSE_CODE, &status);
    if (s.sink.buffer.data() == nullptr || status >= 300) {
      // An error's body (an S3 <Error>) is kept as text, for its message, up to 64 KiB.
      s.response.text.append(
          data, std::min<std::size_t>(
                    bytes, 65536 - std::min<std::size_t>(65536, s.response.text.size())));
      return size * count;
    } else {
      const std::uint64_t room = s.sink.buffer.size() - s.response.body_bytes;
      if (bytes > room) return std::size_t{0};  // more than asked: abort (CURLE_WRITE_ERROR)
      std::memcpy(s.sink.buffer.data() + s.response.body_bytes, data, bytes);
    }
    s.response.body_bytes += bytes;
    return size * count;
  };
  const auto on_progress =
      +[](void* user, curl_off_t, curl_off_t now_down, curl_off_t, curl_off_t now_up) {
        auto& s = *static_cast<State*>(user);
        const auto now = std::chrono::steady_clock::now();
        if (now_down + now_up != s.last_bytes) {
          s.last_bytes = now_down + now_up;
          s.last_progress = now;
          return 0;
        }
        return now - s.last_progress > s.stall ? 1 : 0;  // 1 aborts: CURLE_ABORTED_BY_CALLBACK
      };

  curl_easy_setopt(curl, CURLOPT_URL, request.url.c_str());
  curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(curl, CURLOPT_FOLLOWLOCATION, 1L);
  curl_easy_setopt(curl, CURLOPT_MAXREDIRS, 5L);
  curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS,
                   static_cast<long>(options.connect_timeout.count()));
  curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, static_cast<long>(options.request_timeout.count()));
  curl_easy_setopt(curl, CURLOPT_NOPROGRESS, 0L);
  curl_easy_setopt(curl, CURLOPT_XFERINFOFUNCTION, on_progress);
  curl_easy_setopt(curl, CURLOPT_XFERINFODATA, &state);
  curl_easy_setopt(curl, CURLOPT_HEADERFUNCTION, on_header);
  curl_easy_setopt(curl, CURLOPT_HEADERDATA, &state);
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, on_body);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &state);
  if (request.method == "HEAD") curl_easy_setopt(curl, CURLOPT_NOBODY, 1L);
  std::string range;
  if (request.range_begin) {
    range = std::to_string(*request.range_begin) + "-" + std::to_string(request.range_end - 1);
    curl_easy_setopt(curl, CURLOPT_RANGE, range.c_str());
  }
  curl_slist* headers = nullptr;
  for (const std::string& header : request.headers) {
    headers = curl_slist_append(headers, header.c_str());
  }
  curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
  if (request.signing != nullptr) {
    curl_easy_setopt(curl, CURLOPT_AWS_SIGV4, request.signing->provider.c_str());
    curl_easy_setopt(curl, CURLOPT_USERNAME, request.signing->access_key.c_str());
    curl_easy_setopt(curl, CURLOPT_PASSWORD, request.signing->secret_key.c_str());
  }
  char error_text[CURL_ERROR_SIZE] = {};
  curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, error_text);
  state.response.code = curl_easy_perform(curl);
  curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &state.response.status);
  if (state.response.code != CURLE_OK) {
    state.response.transport_error =
        error_text[0] != '\0' ? error_text : curl_easy_strerror(state.response.code);
  }
  // The handle keeps pointers to these: clear them before they go.
  curl_easy_setopt(curl, CURLOPT_HTTPHEADER, nullptr);
  curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, nullptr);
  curl_slist_free_all(headers);
  return std::move(state.response);
}

}  // namespace stoke::storage::detail

#pragma once
/// @file
/// A small request (a HEAD, a listing page) retried as a range is: on a transport failure, a
/// 5xx, 429 or 408, with backoff and jitter, and a `DataError` when the retries run out.

#include <cstddef>
#include <string>
#include <thread>

#include <stoke/core/error.hpp>
#include <stoke/storage/object_info.hpp>
#include <stoke/storage/remote/detail/curl_request.hpp>
#include <stoke/storage/remote/detail/ranged_get.hpp>
#include <stoke/storage/remote/transfer_options.hpp>

namespace stoke::storage::detail {

/// The 2xx response to `object.request` (its body in `text`), retried per `options.retry`.
/// A 404 is an `InputError` naming the URL; another 4xx, or retries run out, a `DataError`.
template <class Generator>
CurlResponse retried_request(CurlEasy& easy, const RemoteObject& object,
                             const TransferOptions& options, const FetchContext& context,
                             Generator& random) {
  const std::size_t attempts = std::max<std::size_t>(options.retry.attempts, 1);
  std::string last_reason;
  std::size_t attempt = 0;
  for (; attempt < attempts; ++attempt) {
    if (attempt > 0) std::this_thread::sleep_for(options.retry.delay(attempt - 1, random));
    CurlResponse response = perform(easy, object.request, {}, options);
    if (response.code == CURLE_OK && response.status >= 200 && response.status < 300) {
      return response;
    }
    if (response.code == CURLE_OK && response.status == 404) {
      throw InputError("stoke: no object at " + object.shown + " (HTTP 404)");
    }
    last_reason = failure_reason(response, options);
    if (!is_retryable(response)) {
      throw_fetch_error(object, context, object.request.method + " failed: " + last_reason);
    }
  }
  throw_fetch_error(object, context,
                    object.request.method + " failed " + std::to_string(attempt) +
                        " times in a row: last: " + last_reason);
}

}  // namespace stoke::storage::detail

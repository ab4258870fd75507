#pragma once
/// @file
/// `TransferOptions` and `RetryPolicy`: how remote stores fetch (part size, concurrency,
/// timeouts) and how they retry a failed request (attempts, backoff with jitter).

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <random>

namespace stoke::storage {

/// Retries of a failed request: exponential backoff with full jitter (a delay drawn uniformly
/// in `[0, min(max_delay, base_delay * 2^retry)]`, as AWS recommends, so that many clients
/// throttled at once do not come back at once).
struct RetryPolicy {
  std::size_t attempts = 8;                    ///< requests at most, the first included
  std::chrono::milliseconds base_delay{50};    ///< the cap of the first retry's delay
  std::chrono::milliseconds max_delay{5'000};  ///< the cap of every delay

  /// The delay before retry number `retry` (0 for the first retry), drawn from `random`.
  template <class Generator>
  [[nodiscard]] std::chrono::milliseconds delay(std::size_t retry, Generator& random) const {
    const auto doubling = std::min<std::size_t>(retry, 30);
    const auto cap = std::min<std::int64_t>(max_delay.count(),
                                            base_delay.count() * (std::int64_t{1} << doubling));
    return std::chrono::milliseconds(
        std::uniform_int_distribution<std::int64_t>(0, std::max<std::int64_t>(cap, 0))(random));
  }
};

/// How a remote store transfers: an object is fetched as ranged requests of `part_size`
/// bytes, `concurrency` at a time, on the store's own I/O threads (apart from decoding). Every
/// request has a deadline, so a transfer never hangs: it fails (and is retried) when it cannot
/// connect within `connect_timeout`, when no byte arrives for `stall_timeout`, or when it takes
/// longer than `request_timeout`. (libcurl looks at an idle transfer about once a second, so a
/// stall is noticed between `stall_timeout` and a second after it.)
struct TransferOptions {
  std::uint64_t part_size = std::uint64_t{8} << 20;    ///< bytes per ranged request
  std::size_t concurrency = 8;                         ///< I/O threads, requests in flight
  std::chrono::milliseconds connect_timeout{5'000};    ///< to open a connection
  std::chrono::milliseconds stall_timeout{10'000};     ///< with no byte received
  std::chrono::milliseconds request_timeout{300'000};  ///< for one whole request
  RetryPolicy retry{};                                 ///< what a failed request does
};

}  // namespace stoke::storage

#pragma once
/// @file
/// How errors name the thread that made a batch or a part of one.

#include <cstddef>
#include <limits>
#include <string>

namespace stoke::detail {

/// The consumer's own thread, filling a part of the batch it waits for.
inline constexpr std::size_t consumer_thread = std::numeric_limits<std::size_t>::max();
/// The consumer's own thread, making whole batches (`BatchLoader`, or no workers).
inline constexpr std::size_t caller_thread = consumer_thread - 1;

/// `"consumer"`, `"caller"` or `"worker N"`, for the thread number `thread`.
inline std::string thread_name(std::size_t thread) {
  if (thread == consumer_thread) return "consumer";
  if (thread == caller_thread) return "caller";
  return "worker " + std::to_string(thread);
}

}  // namespace stoke::detail

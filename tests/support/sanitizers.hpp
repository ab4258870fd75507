#pragma once
/// @file
/// Whether a test runs under a sanitizer, for the checks a sanitizer's runtime changes: resident
/// memory (shadow memory, quarantined frees) and fork (ThreadSanitizer's runtime may deadlock a
/// child forked while other threads run).

namespace stoke::testing {

#if defined(__SANITIZE_THREAD__)
inline constexpr bool under_thread_sanitizer = true;
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
inline constexpr bool under_thread_sanitizer = true;
#else
inline constexpr bool under_thread_sanitizer = false;
#endif
#else
inline constexpr bool under_thread_sanitizer = false;
#endif

#if defined(__SANITIZE_ADDRESS__)
inline constexpr bool under_address_sanitizer = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
inline constexpr bool under_address_sanitizer = true;
#else
inline constexpr bool under_address_sanitizer = false;
#endif
#else
inline constexpr bool under_address_sanitizer = false;
#endif

/// Under either sanitizer.
inline constexpr bool under_sanitizer = under_thread_sanitizer || under_address_sanitizer;

}  // namespace stoke::testing

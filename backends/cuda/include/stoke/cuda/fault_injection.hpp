#pragma once
/// @file
/// Test-only fault injection of the CUDA backend: `testing::fail_copy` makes one upload of
/// every stager made afterwards report a failure at its fence, in process, with the device
/// left as it was (a real device fault ends the CUDA context, and every test after it). Unused,
/// it costs a stager one atomic load when it is made.

#include <atomic>
#include <cstddef>
#include <limits>
#include <optional>

namespace stoke::cuda {
namespace detail {

/// What `testing::fail_copy` asked for: the copy (from 0) every stager made from now on fails,
/// or `no_injected_failure`.
inline constexpr std::size_t no_injected_failure = std::numeric_limits<std::size_t>::max();

/// The copy that stagers made from now on fail (`no_injected_failure`: none).
inline std::atomic<std::size_t>& injected_copy_failure() noexcept {
  static std::atomic<std::size_t> copy{no_injected_failure};
  return copy;
}

}  // namespace detail

/// Hooks for tests of code built on the CUDA backend; never for production use.
namespace testing {

/// Makes upload `copy` (counted from 0, each of `upload`, `upload_with` and `upload_into`
/// counting one) of every `Stager` made from now on fail: its copy runs, but its fence and the
/// buffer's `written()` fence throw a `DeviceError` naming it ("... failed copy N ...") once
/// the copy is done, and work queued after that fence refuses to wait for it. Staging memory
/// is freed as after a good copy. `std::nullopt` turns it off for stagers made afterwards.
inline void fail_copy(std::optional<std::size_t> copy) noexcept {
  detail::injected_copy_failure().store(copy.value_or(detail::no_injected_failure));
}

}  // namespace testing
}  // namespace stoke::cuda

#pragma once
/// @file
/// `dist::run_rank`: runs one rank's work so that a failure on any rank stops the whole job
/// with the reason, instead of leaving the other ranks waiting in a collective forever.

#include <concepts>
#include <cstddef>
#include <cstdio>
#include <exception>
#include <string>
#include <type_traits>
#include <utility>

#include <stoke/dist/error.hpp>
#include <stoke/dist/process_group.hpp>

namespace stoke::dist {

/// Runs `fn()` on this rank and returns its exit code: what `fn` returns, or 0 if it returns
/// nothing.
///
/// - A `GroupError` (such as an `AgreementError`) was raised by every rank alike, so no rank
///   waits on another: it is printed on stderr as `stoke: rank R of N: <what>` and 1 is
///   returned, on every rank.
/// - Any other exception was raised on this rank alone, while the others may be waiting for
///   it in a collective call: `group.abort(what)` ends the job on every rank (an MPI group
///   prints the reason with the rank and calls `MPI_Abort`).
template <ProcessGroup G, class F>
  requires std::invocable<F&>
int run_rank(G& group, F&& fn) {
  try {
    if constexpr (std::is_void_v<std::invoke_result_t<F&>>) {
      fn();
      return 0;
    } else {
      return static_cast<int>(fn());
    }
  } catch (const GroupError& error) {
    const std::string message = detail::on_rank(group.rank(), group.size(), error.what());
    std::fprintf(stderr, "stoke: %s\n", message.c_str());
    std::fflush(stderr);
    return 1;
  } catch (const std::exception& error) {
    group.abort(error.what());
  } catch (...) {
    group.abort("unknown exception");
  }
  std::terminate();  // not reached: `abort` does not return (requirement 6 of ProcessGroup)
}

}  // namespace stoke::dist

#pragma once
/// @file
/// The errors of process groups: one raised by every rank together, one for a group that a
/// rank aborted, and the agreement check's.

#include <cstddef>
#include <string>
#include <string_view>

#include <stoke/core/error.hpp>

namespace stoke::dist {

/// An error that every rank of a process group raises together, with the same message (it
/// is decided from the result of a collective call). Since no rank is left waiting for
/// another, `run_rank` reports it and returns instead of aborting the job.
class GroupError : public Error {
 public:
  using Error::Error;
};

/// The ranks disagree on what they train on (seed, epoch, dataset size, batch size, order,
/// remainder); the message names every mismatched field with both values.
class AgreementError : public GroupError {
 public:
  using GroupError::GroupError;
};

/// A rank aborted the group: raised by the aborting call and by every pending and later
/// collective call of the other ranks (in-process groups; an MPI group ends the job instead).
class GroupAbortedError : public Error {
 public:
  using Error::Error;
};

namespace detail {
/// `rank R of N: <reason>`, without the `stoke: ` that stoke's own messages start with.
inline std::string on_rank(std::size_t rank, std::size_t size, std::string_view reason) {
  if (reason.starts_with("stoke: ")) reason.remove_prefix(7);
  return "rank " + std::to_string(rank) + " of " + std::to_string(size) + ": " +
         std::string(reason);
}
}  // namespace detail

}  // namespace stoke::dist

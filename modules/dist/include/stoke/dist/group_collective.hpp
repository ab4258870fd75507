#pragma once
/// @file
/// `dist::GroupCollective`: a `Collective` over this process's devices that also sums across
/// the ranks of a `ProcessGroup`, so the learner trains on every device of every machine
/// without a change; and `make_group_collective_factory`, what `LearnerOptions` takes.

#include <algorithm>
#include <cstddef>
#include <functional>
#include <memory>
#include <span>
#include <utility>

#include <stoke/core/collective.hpp>
#include <stoke/core/error.hpp>
#include <stoke/core/shared_memory_collective.hpp>
#include <stoke/dist/process_group.hpp>

namespace stoke::dist {

/// Sums buffers over this process's devices (participants of `Local`) and over all ranks of
/// `Group`, in three steps:
/// 1. the local collective sums the buffers of this process's devices;
/// 2. participant 0 sums that across the ranks through the group (host memory);
/// 3. the other participants zero their buffers and the local collective sums again, so every
///    participant gets participant 0's global sum (adding zeros changes no bit).
///
/// Every rank gets the same bits (requirement 3 of `ProcessGroup`), so replicas on every
/// device of every rank take the same optimizer steps. The buffers must be host memory:
/// a device backend bootstraps its own collective across ranks instead (for CUDA, NCCL with
/// the `ncclUniqueId` broadcast through the group).
template <Collective Local, ProcessGroup Group>
class GroupCollective {
 public:
  /// Sums over `local`'s participants, then across `group`'s ranks. `group` must outlive
  /// this collective.
  GroupCollective(std::unique_ptr<Local> local, Group& group)
      : local_(std::move(local)), group_(&group) {
    if (!local_) throw UsageError("stoke: GroupCollective needs a local collective");
  }

  /// Number of local participants (this process's devices).
  [[nodiscard]] std::size_t size() const { return local_->size(); }

  /// See `Collective`: every participant's `values` becomes the sum over every participant
  /// of every rank.
  void all_reduce_sum(std::size_t participant, std::span<float> values) {
    local_->all_reduce_sum(participant, values);
    if (group_->size() == 1) return;
    if (participant == 0) {
      group_->all_reduce_sum(values);
    } else {
      std::ranges::fill(values, 0.0f);
    }
    if (local_->size() > 1) local_->all_reduce_sum(participant, values);
  }

  /// See `stoke::all_gather`, over this process's participants only: every rank holds the
  /// same values, so the ranks need not talk.
  void all_gather(std::size_t participant, std::span<float> values) {
    stoke::all_gather(*local_, participant, values);
  }

  /// See `Collective`: wakes this process's waiting participants with an error. Other ranks
  /// are not told: the caller ends the job through `ProcessGroup::abort` (see `run_rank`).
  void abort() { local_->abort(); }

 private:
  std::unique_ptr<Local> local_;
  Group* group_;
};

/// What `LearnerOptions::make_collective` takes: for `participants` devices, a
/// `GroupCollective` over `make_local(participants)` (a `std::unique_ptr` to a `Collective`)
/// and `group`. `group` must outlive every collective made.
template <ProcessGroup Group, class MakeLocal>
  requires std::invocable<MakeLocal&, std::size_t>
[[nodiscard]] std::function<AnyCollective(std::size_t)> make_group_collective_factory(
    Group& group, MakeLocal make_local) {
  return [&group, make_local = std::move(make_local)](std::size_t participants) mutable {
    auto local = make_local(participants);
    using Local = typename decltype(local)::element_type;
    return AnyCollective(std::make_unique<GroupCollective<Local, Group>>(std::move(local), group));
  };
}

/// The same, summing this process's devices through shared memory
/// (`SharedMemoryCollective`): for every backend whose buffers are in host memory.
template <ProcessGroup Group>
[[nodiscard]] std::function<AnyCollective(std::size_t)> make_group_collective_factory(
    Group& group) {
  return make_group_collective_factory(group, [](std::size_t participants) {
    return std::make_unique<SharedMemoryCollective>(participants);
  });
}

}  // namespace stoke::dist

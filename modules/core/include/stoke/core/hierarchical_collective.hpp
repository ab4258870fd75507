#pragma once
/// @file
/// `HierarchicalCollective`: all_reduce and all_gather over participants grouped by
/// `LaneGroups` (the lanes of each GPU): each group's leader combines its group in a fixed
/// order, the leaders combine across the groups, and the leader hands the result back. What
/// runs where (a device's kernels and copies, NCCL among the leaders) is its engine's; the
/// bookkeeping, the order and the hand-over between threads are here, the same for every
/// backend.

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <mutex>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include <stoke/core/collective.hpp>
#include <stoke/core/error.hpp>
#include <stoke/core/lane_groups.hpp>

namespace stoke {

/// A collective over participants in `LaneGroups`, one thread each, whose work an `Engine`
/// does. Every call is one exchange per group: each member publishes its values and the
/// group's leader, once all have, queues the whole group's work through the engine (on its
/// own thread) while the others wait for it to have been queued, not for it to be done. So
/// the members' values are touched by one thread at a time, and a backend whose engine only
/// queues device work keeps its step free of host waits.
///
/// `all_reduce_sum`: the leader sums the group's values in member order, left to right (the
/// order of `SharedMemoryCollective`, so one group gives its bits), the leaders sum across
/// the groups (`Engine::across_groups`; never with one group), and the leader copies the
/// result to the other members. `all_gather`: the leader copies each member's parameter shard
/// into its own values; with several groups it zeroes the shards of the other groups and the
/// leaders sum across the groups (adding zeros keeps every value, but turns a `-0.0` into
/// `+0.0`); then it copies the whole to the other members.
///
/// Engine requirements, for `Values` each value type the collective is called with (such as
/// `std::span<float>` or a device buffer), every call but `check` and `abort` made on the
/// leader's thread of group `g`, with `members` its members' values in member order:
/// 1. `e.check(k, values)` throws `UsageError` unless participant `k` may pass `values`;
/// 2. `e.floats(values)` is the number of floats of `values`;
/// 3. `e.begin(g, members)` orders what follows after the work pending on every member;
/// 4. `e.sum_in_order(g, members)` makes `*members[0]` the sum of all members, left to right;
/// 5. `e.copy(g, from, to, range)` copies the floats of `range` (a `ParameterShard`);
/// 6. `e.zero(g, values, range)` zeroes the floats of `range`;
/// 7. `e.across_groups(g, values)` sums the leaders' values across the groups (group `g` is
///    participant `g` there), only called with more than one group;
/// 8. `e.end(g, members)` makes the members' results visible as the backend's calls promise
///    (marks device buffers written, or waits);
/// 9. `e.abort()` wakes a leader waiting in `across_groups`.
template <class Engine>
class HierarchicalCollective {
 public:
  /// A collective over `groups`, whose work `engine` does.
  HierarchicalCollective(LaneGroups groups, Engine engine)
      : groups_(std::move(groups)), engine_(std::move(engine)), states_(groups_.groups()) {
    for (std::size_t g = 0; g < states_.size(); ++g) {
      states_[g].published.resize(groups_.members(g).size());
    }
  }
  HierarchicalCollective(const HierarchicalCollective&) = delete;
  HierarchicalCollective& operator=(const HierarchicalCollective&) = delete;

  /// Number of participants.
  [[nodiscard]] std::size_t size() const noexcept { return groups_.participants(); }
  /// How the participants are grouped.
  [[nodiscard]] const LaneGroups& groups() const noexcept { return groups_; }
  /// The engine.
  [[nodiscard]] Engine& engine() noexcept { return engine_; }

  /// Replaces every participant's `values` by the element-wise sum over all of them, as the
  /// class comment says. Called once by every participant with values of one length.
  template <class Values>
  void all_reduce_sum(std::size_t participant, Values& values) {
    reduce(participant, values);
  }
  /// `all_reduce_sum` over a span (which may be a temporary).
  void all_reduce_sum(std::size_t participant, std::span<float> values) {
    reduce(participant, values);
  }

  /// See `stoke::all_gather`: every participant's `values` receives, in each parameter shard
  /// `parameter_shard(length, k, size())`, participant `k`'s values there.
  template <class Values>
  void all_gather(std::size_t participant, Values& values) {
    gather(participant, values);
  }
  /// `all_gather` over a span (which may be a temporary).
  void all_gather(std::size_t participant, std::span<float> values) { gather(participant, values); }

  /// Wakes every waiting participant with an error; later calls fail at once.
  void abort() {
    {
      const std::lock_guard lock(failure_mutex_);
      aborted_ = true;
    }
    for (State& state : states_) {
      {
        const std::lock_guard lock(state.mutex);
      }  // a waiter is waiting or has not checked
      state.changed.notify_all();
    }
    engine_.abort();
  }

 private:
  /// One group's exchange: what its members published for the call in progress.
  struct State {
    std::mutex mutex;
    std::condition_variable changed;
    std::vector<void*> published;  ///< member `i`'s values (a `Values*`)
    std::size_t arrived = 0;       ///< members that published for the call in progress
    std::uint64_t completed = 0;   ///< calls the leader finished
    std::exception_ptr failure;    ///< what the last call's leader threw
  };

  /// `all_reduce_sum`.
  template <class Values>
  void reduce(std::size_t participant, Values& values) {
    exchange(participant, values, [this](std::size_t g, std::span<Values* const> members) {
      engine_.begin(g, members);
      if (members.size() > 1) engine_.sum_in_order(g, members);
      if (groups_.groups() > 1) engine_.across_groups(g, *members[0]);
      hand_back(g, members);
      engine_.end(g, members);
    });
  }

  /// `all_gather`.
  template <class Values>
  void gather(std::size_t participant, Values& values) {
    exchange(participant, values, [this](std::size_t g, std::span<Values* const> members) {
      engine_.begin(g, members);
      Values& lead = *members[0];
      const std::size_t length = engine_.floats(lead);
      const std::span<const std::size_t> own = groups_.members(g);
      for (std::size_t i = 1; i < members.size(); ++i) {
        copy(g, *members[i], lead, parameter_shard(length, own[i], size()));
      }
      if (groups_.groups() > 1) {
        for (std::size_t k = 0; k < size(); ++k) {
          const ParameterShard shard = parameter_shard(length, k, size());
          if (groups_.group_of(k) != g && shard.size() > 0) engine_.zero(g, lead, shard);
        }
        engine_.across_groups(g, lead);
      }
      hand_back(g, members);
      engine_.end(g, members);
    });
  }

  /// Copies the leader's values to the other members.
  template <class Values>
  void hand_back(std::size_t g, std::span<Values* const> members) {
    const std::size_t length = engine_.floats(*members[0]);
    for (std::size_t i = 1; i < members.size(); ++i) {
      copy(g, *members[0], *members[i], ParameterShard{0, length});
    }
  }

  /// `engine_.copy` unless `range` is empty.
  template <class Values>
  void copy(std::size_t g, const Values& from, Values& to, ParameterShard range) {
    if (range.size() > 0) engine_.copy(g, from, to, range);
  }

  /// Publishes `values` as `participant`'s; the group's leader, once every member has,
  /// runs `work(g, members)` and the others return once it has (throwing what it threw).
  template <class Values, class Work>
  void exchange(std::size_t participant, Values& values, Work&& work) {
    if (participant >= size()) {
      abort();
      throw UsageError("stoke: participant " + std::to_string(participant) +
                       " of a collective of " + std::to_string(size()));
    }
    try {
      engine_.check(participant, values);
    } catch (...) {
      record_failure(std::current_exception());
      abort();
      throw;
    }
    const std::size_t g = groups_.group_of(participant);
    const std::size_t position = groups_.position(participant);
    State& state = states_[g];
    std::unique_lock lock(state.mutex);
    throw_if_aborted();
    state.published[position] = &values;
    ++state.arrived;
    if (position != 0) {
      const std::uint64_t call = state.completed;
      state.changed.notify_all();
      state.changed.wait(lock, [&] { return state.completed != call || aborted(); });
      if (state.completed == call) throw_if_aborted();
      if (state.failure) std::rethrow_exception(state.failure);
      return;
    }
    state.changed.wait(lock, [&] { return state.arrived == state.published.size() || aborted(); });
    throw_if_aborted();
    std::vector<Values*> members(state.published.size());
    for (std::size_t i = 0; i < members.size(); ++i) {
      members[i] = static_cast<Values*>(state.published[i]);
    }
    lock.unlock();
    std::exception_ptr failure;
    try {
      check_lengths(g, std::span<Values* const>(members));
      work(g, std::span<Values* const>(members));
    } catch (...) {
      failure = std::current_exception();
    }
    lock.lock();
    state.arrived = 0;
    state.failure = failure;
    ++state.completed;
    lock.unlock();
    state.changed.notify_all();
    if (failure) {
      record_failure(failure);
      abort();
      std::rethrow_exception(failure);
    }
  }

  /// Throws (in every member alike, through the leader) unless the members' lengths agree.
  template <class Values>
  void check_lengths(std::size_t g, std::span<Values* const> members) {
    const std::size_t length = engine_.floats(*members[0]);
    for (std::size_t i = 1; i < members.size(); ++i) {
      if (engine_.floats(*members[i]) != length) {
        throw Error("stoke: collective: participant " + std::to_string(groups_.members(g)[i]) +
                    " has " + std::to_string(engine_.floats(*members[i])) +
                    " values, participant " + std::to_string(groups_.members(g)[0]) + " has " +
                    std::to_string(length));
      }
    }
  }

  [[nodiscard]] bool aborted() {
    const std::lock_guard lock(failure_mutex_);
    return aborted_;
  }

  /// Keeps the first failure, which later calls throw.
  void record_failure(std::exception_ptr failure) {
    const std::lock_guard lock(failure_mutex_);
    if (!first_failure_) first_failure_ = std::move(failure);
  }

  /// Throws the first failure, or that the collective was aborted, once it was.
  void throw_if_aborted() {
    std::exception_ptr failure;
    {
      const std::lock_guard lock(failure_mutex_);
      if (!aborted_) return;
      failure = first_failure_;
    }
    if (failure) std::rethrow_exception(failure);
    throw Error("stoke: the collective was aborted by another participant");
  }

  LaneGroups groups_;
  Engine engine_;
  std::vector<State> states_;
  std::mutex failure_mutex_;
  bool aborted_ = false;
  std::exception_ptr first_failure_;
};

}  // namespace stoke

#pragma once
/// @file
/// `SharedMemoryCollective`: all_reduce between the threads of one process over host memory
/// (the CPU backend's collective, and the host stage of the Vulkan one and of `dist`'s).

#include <algorithm>
#include <array>
#include <atomic>
#include <cstddef>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include <stoke/core/collective.hpp>
#include <stoke/core/error.hpp>

namespace stoke {

/// Sums buffers across participants that share memory, in place. Participant `k` owns slice
/// `k` of the buffers: it sums that slice of every participant's buffer (in the fixed order
/// participant 0, 1, ...) and writes the sum back into every buffer. So the work is spread
/// over all participants' threads, no element is read or written by two of them, results are
/// deterministic, and a call costs two barriers: one to publish the buffers, one to finish.
class SharedMemoryCollective {
 public:
  /// A collective of `participants` threads.
  explicit SharedMemoryCollective(std::size_t participants)
      : participants_(participants), buffers_(participants) {
    if (participants == 0) throw UsageError("stoke: a collective needs a participant");
  }

  /// Number of participants.
  [[nodiscard]] std::size_t size() const noexcept { return participants_; }

  /// Replaces every `values` by the element-wise sum over all participants.
  void all_reduce_sum(std::size_t participant, std::span<float> values) {
    check_participant(participant);
    if (participants_ == 1) return;
    publish(participant, values);
    const ParameterShard own = parameter_shard(values.size(), participant, participants_);
    constexpr std::size_t kBlock = 1024;  // a block of sums stays in L1 between the passes
    std::array<float, kBlock> sums;
    for (std::size_t block = own.begin; block < own.end; block += kBlock) {
      const std::size_t count = std::min(kBlock, own.end - block);
      std::copy_n(buffers_[0].data() + block, count, sums.data());
      for (std::size_t k = 1; k < participants_; ++k) {
        const float* source = buffers_[k].data() + block;
        for (std::size_t i = 0; i < count; ++i) sums[i] += source[i];
      }
      for (std::size_t k = 0; k < participants_; ++k) {
        std::copy_n(sums.data(), count, buffers_[k].data() + block);
      }
    }
    arrive();  // every slice is written back: buffers may be reused
  }

  /// See `stoke::all_gather`: every participant copies the other participants' parameter shards of
  /// their buffers into its own (each writes only its own buffer, outside its own parameter shard).
  void all_gather(std::size_t participant, std::span<float> values) {
    check_participant(participant);
    if (participants_ == 1) return;
    publish(participant, values);
    for (std::size_t k = 0; k < participants_; ++k) {
      if (k == participant) continue;
      const ParameterShard shard = parameter_shard(values.size(), k, participants_);
      std::copy_n(buffers_[k].data() + shard.begin, shard.size(), values.data() + shard.begin);
    }
    arrive();  // every parameter shard is copied: buffers may be reused
  }

  /// Wakes every waiting participant with an error; later calls fail at once.
  void abort() {
    generation_.fetch_or(kAborted);
    generation_.notify_all();
  }

 private:
  /// Throws `UsageError` unless `participant` is one of this collective's.
  void check_participant(std::size_t participant) const {
    if (participant >= participants_) {
      throw UsageError("stoke: participant " + std::to_string(participant) +
                       " of a collective of " + std::to_string(participants_));
    }
  }

  /// Publishes `values` as `participant`'s buffer and waits for every participant's; throws
  /// (in every participant alike) if the lengths differ.
  void publish(std::size_t participant, std::span<float> values) {
    buffers_[participant] = values;
    arrive();
    for (std::size_t k = 0; k < participants_; ++k) {
      if (buffers_[k].size() != buffers_[0].size()) {
        abort();
        throw Error("stoke: collective: participant " + std::to_string(k) + " has " +
                    std::to_string(buffers_[k].size()) + " values, participant 0 has " +
                    std::to_string(buffers_[0].size()));
      }
    }
  }

  /// A reusable barrier over all participants that fails once aborted. A waiter spins
  /// briefly (a step's participants usually arrive within microseconds of each other), then
  /// sleeps on the generation counter. A completed barrier adds 2 to the counter, `abort`
  /// sets its lowest bit, so a waiter tells the two apart.
  void arrive() {
    const std::size_t seen = generation_.load();
    if ((seen & kAborted) != 0) throw aborted();
    if (arrived_.fetch_add(1) + 1 == participants_) {
      arrived_.store(0);
      generation_.fetch_add(2);
      generation_.notify_all();
      return;
    }
    for (int spin = 0; spin < kSpins && generation_.load() == seen; ++spin) {
      std::this_thread::yield();
    }
    std::size_t now = generation_.load();
    while (now == seen) {
      generation_.wait(seen);
      now = generation_.load();
    }
    if ((now | kAborted) == (seen | kAborted)) throw aborted();  // only the abort bit changed
  }

  static Error aborted() {
    return Error("stoke: the collective was aborted by another participant");
  }

  static constexpr int kSpins = 64;
  static constexpr std::size_t kAborted = 1;

  std::size_t participants_;
  std::vector<std::span<float>> buffers_;
  std::atomic<std::size_t> arrived_ = 0;
  std::atomic<std::size_t> generation_ = 0;
};

}  // namespace stoke

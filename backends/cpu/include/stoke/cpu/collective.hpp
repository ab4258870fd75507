#pragma once
/// @file
/// `cpu::SharedMemoryCollective`: all_reduce between CPU devices (threads of one process).

#include <algorithm>
#include <condition_variable>
#include <cstddef>
#include <mutex>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include <stoke/core/error.hpp>

namespace stoke::cpu {

/// Sums buffers across participants that share memory. Each call is a reduce-scatter then an
/// all-gather: participant `k` sums slice `k` of every buffer into a shared result, then each
/// copies the whole result back, so the work is spread over all participants' threads.
/// The summation order is fixed (participant 0, 1, ...), so results are deterministic.
class SharedMemoryCollective {
 public:
  /// A collective of `participants` threads.
  explicit SharedMemoryCollective(std::size_t participants)
      : participants_(participants), buffers_(participants) {
    if (participants == 0) throw std::invalid_argument("stoke: a collective needs a participant");
  }

  /// Number of participants.
  [[nodiscard]] std::size_t size() const noexcept { return participants_; }

  /// Replaces every `values` by the element-wise sum over all participants.
  void all_reduce_sum(std::size_t participant, std::span<float> values) {
    if (participant >= participants_) {
      throw std::invalid_argument("stoke: participant " + std::to_string(participant) +
                                  " of a collective of " + std::to_string(participants_));
    }
    if (participants_ == 1) return;
    buffers_[participant] = values;
    arrive();  // every buffer is published
    if (participant == 0) {
      for (std::size_t k = 1; k < participants_; ++k) {
        if (buffers_[k].size() != values.size()) {
          abort();
          throw Error("stoke: all_reduce: participant " + std::to_string(k) + " has " +
                      std::to_string(buffers_[k].size()) + " values, participant 0 has " +
                      std::to_string(values.size()));
        }
      }
      result_.assign(values.size(), 0.0f);
    }
    arrive();  // sizes checked, result sized
    const std::size_t length = values.size();
    const std::size_t begin = length * participant / participants_;
    const std::size_t end = length * (participant + 1) / participants_;
    for (std::size_t k = 0; k < participants_; ++k) {
      const float* source = buffers_[k].data();
      for (std::size_t i = begin; i < end; ++i) result_[i] += source[i];
    }
    arrive();  // the result is complete
    std::copy(result_.begin(), result_.end(), values.begin());
    arrive();  // everyone copied: buffers and result may be reused
  }

  /// Wakes every waiting participant with an error; later calls fail at once.
  void abort() {
    {
      std::lock_guard lock(mutex_);
      aborted_ = true;
    }
    changed_.notify_all();
  }

 private:
  /// A reusable barrier over all participants that fails once aborted.
  void arrive() {
    std::unique_lock lock(mutex_);
    if (aborted_) throw Error("stoke: all_reduce was aborted by another participant");
    const std::size_t generation = generation_;
    if (++arrived_ == participants_) {
      arrived_ = 0;
      ++generation_;
      changed_.notify_all();
      return;
    }
    changed_.wait(lock, [&] { return generation_ != generation || aborted_; });
    if (generation_ == generation) {
      throw Error("stoke: all_reduce was aborted by another participant");
    }
  }

  std::size_t participants_;
  std::vector<std::span<float>> buffers_;
  std::vector<float> result_;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::size_t arrived_ = 0;
  std::size_t generation_ = 0;
  bool aborted_ = false;
};

}  // namespace stoke::cpu

#pragma once
/// @file
/// How a `WorkerPool`'s consumer waits for the step it needs: `ConsumerWait` spins briefly then
/// sleeps, and `BatchTimeout` bounds the wait for one step.

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <mutex>
#include <optional>
#include <thread>

namespace stoke::detail {

/// The consumer's wait for a result: when recent waits were short (small batches), it spins
/// briefly (lock released, yielding the processor) before it sleeps, since a sleep and a wake-up
/// cost more than such a wait. Threads that land a result `publish()` it (a spinning consumer
/// looks) and `wake()` a sleeping one.
class ConsumerWait {
 public:
  /// How long a consumer may spin before it sleeps (a wait longer than that is not short).
  static constexpr std::chrono::nanoseconds max_spin{std::chrono::microseconds(50)};

  /// Marks that a result landed or the epoch changed (a spinning consumer looks).
  void publish() noexcept { published_.fetch_add(1, std::memory_order_release); }
  /// Wakes a sleeping consumer (the pool's mutex held or not).
  void wake() { result_ready_.notify_all(); }
  /// Lets the next wait spin as long as any may: the first step of an epoch made in chunks is
  /// ready in microseconds.
  void expect_short_wait() noexcept { spin_budget_ = max_spin; }

  /// Waits, `lock` (the pool's mutex) held, until `ready()` or `give_up`: spins for up to twice
  /// the last wait when that was short, then sleeps until woken. Remembers how long it waited;
  /// whether `ready()`.
  template <class Ready>
  bool wait(std::unique_lock<std::mutex>& lock, const Ready& ready,
            std::chrono::steady_clock::time_point give_up) {
    const auto start = std::chrono::steady_clock::now();
    const auto deadline = std::min(start + spin_budget_, give_up);
    while (!ready() && std::chrono::steady_clock::now() < deadline) {
      const std::size_t seen = published_.load(std::memory_order_relaxed);
      lock.unlock();
      for (unsigned spins = 0; published_.load(std::memory_order_acquire) == seen; ++spins) {
        if (spins % 64 == 63 && std::chrono::steady_clock::now() >= deadline) break;
        std::this_thread::yield();
      }
      lock.lock();
    }
    if (give_up == std::chrono::steady_clock::time_point::max()) {
      result_ready_.wait(lock, ready);
    } else if (!result_ready_.wait_until(lock, give_up, ready)) {
      return false;
    }
    const auto waited = std::chrono::steady_clock::now() - start;
    spin_budget_ = waited < max_spin ? std::min<std::chrono::nanoseconds>(2 * waited, max_spin)
                                     : std::chrono::nanoseconds::zero();
    return true;
  }

 private:
  std::condition_variable result_ready_;
  std::atomic<std::size_t> published_ = 0;           ///< bumped by `publish()`
  std::chrono::nanoseconds spin_budget_ = max_spin;  ///< the next spin, at most
};

/// The loader's batch timeout (zero: none): how long the consumer may wait for one step,
/// counted from its first wait for that step, so that a consumer waiting in slices (to look at
/// signals) still times out; and how long stopping waits for a worker. Guarded by the pool's
/// mutex.
class BatchTimeout {
 public:
  /// A bound of `limit` on the wait for one step (zero: none).
  explicit BatchTimeout(std::chrono::milliseconds limit) : limit_(limit) {}

  /// The bound, in milliseconds (zero: none).
  [[nodiscard]] std::chrono::milliseconds limit() const noexcept { return limit_; }

  /// When the wait for `step` times out (`time_point::max()` without a bound); the first call
  /// for a step starts its clock.
  std::chrono::steady_clock::time_point deadline(std::size_t step) {
    if (waiting_for_ != step) {
      waiting_for_ = step;
      waiting_since_ = std::chrono::steady_clock::now();
    }
    if (limit_.count() == 0) return std::chrono::steady_clock::time_point::max();
    return waiting_since_ + limit_;
  }
  /// Forgets the step waited for: the next wait starts a clock of its own.
  void forget() noexcept { waiting_for_.reset(); }

  /// When to stop waiting for the workers of a pool told to stop now (never without a bound).
  [[nodiscard]] std::chrono::steady_clock::time_point stop_deadline() const {
    if (limit_.count() == 0) return std::chrono::steady_clock::time_point::max();
    return std::chrono::steady_clock::now() + limit_;
  }

 private:
  std::chrono::milliseconds limit_;
  std::optional<std::size_t> waiting_for_;                 ///< the step the consumer waits for
  std::chrono::steady_clock::time_point waiting_since_{};  ///< since its first wait for it
};

}  // namespace stoke::detail

#pragma once
/// @file
/// `cuda::detail::NcclWatchdog`: a thread of its own that watches the NCCL collectives in
/// flight, so the device threads that queued them never poll: it checks each one's completion
/// (its fence), the communicators' asynchronous errors and a deadline, and on a failure records
/// it and calls the collective's abort, which wakes every participant and fails its next call.

#if !defined(STOKE_CUDA_HAS_NCCL)
#error "stoke::cuda was built without NCCL (STOKE_ENABLE_NCCL is OFF)"
#endif

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <exception>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <stoke/core/error.hpp>
#include <stoke/cuda/fence.hpp>

namespace stoke::cuda::detail {

/// Watches collectives in flight until each completes, fails or times out. Thread-safe.
class NcclWatchdog {
 public:
  /// What the watchdog calls: `check(participant)` throws if the participant's communicator
  /// reports an asynchronous error; `abort()` aborts the collective after a failure.
  NcclWatchdog(std::function<void(std::size_t)> check, std::function<void()> abort)
      : check_(std::move(check)), abort_(std::move(abort)), thread_([this] { run(); }) {}
  NcclWatchdog(const NcclWatchdog&) = delete;
  NcclWatchdog& operator=(const NcclWatchdog&) = delete;
  /// Stops watching (collectives still in flight are no longer timed) and joins the thread.
  ~NcclWatchdog() {
    {
      const std::lock_guard lock(mutex_);
      stopping_ = true;
    }
    changed_.notify_all();
    thread_.join();
  }

  /// Watches the collective `what` of `participant` (on `device`), done when `done` signals,
  /// failed past `deadline`.
  void watch(std::size_t participant, std::string what, Fence done,
             std::chrono::steady_clock::time_point deadline) {
    {
      const std::lock_guard lock(mutex_);
      watched_.push_back({participant, std::move(what), std::move(done), deadline});
    }
    changed_.notify_all();
  }

  /// Rethrows the first failure the watchdog saw, if any.
  void rethrow_failure() const {
    const std::lock_guard lock(mutex_);
    if (failure_) std::rethrow_exception(failure_);
  }

 private:
  struct Watched {
    std::size_t participant;
    std::string what;
    Fence done;
    std::chrono::steady_clock::time_point deadline;
  };
  /// How often collectives in flight are checked.
  static constexpr std::chrono::milliseconds period{1};

  void run() {
    std::unique_lock lock(mutex_);
    for (;;) {
      if (watched_.empty()) {
        changed_.wait(lock, [this] { return stopping_ || !watched_.empty(); });
      } else {
        changed_.wait_for(lock, period, [this] { return stopping_; });
      }
      if (stopping_) return;
      std::vector<Watched> now = watched_;
      lock.unlock();
      std::exception_ptr failed;
      std::vector<std::size_t> finished;
      for (std::size_t i = 0; i < now.size() && !failed; ++i) {
        try {
          check_(now[i].participant);
          if (now[i].done.ready()) {
            finished.push_back(i);
          } else if (std::chrono::steady_clock::now() > now[i].deadline) {
            throw Error("stoke: cuda: the " + now[i].what + " of participant " +
                        std::to_string(now[i].participant) +
                        " did not finish in time: a peer is missing or stalled");
          }
        } catch (...) {
          failed = std::current_exception();
        }
      }
      if (failed) abort_();
      lock.lock();
      if (failed && !failure_) failure_ = failed;
      // Drop what finished (or everything, after a failure): entries are only appended.
      std::vector<Watched> kept;
      for (std::size_t i = 0; i < watched_.size(); ++i) {
        const bool done = i < now.size() && (failed || std::find(finished.begin(), finished.end(),
                                                                 i) != finished.end());
        if (!done) kept.push_back(std::move(watched_[i]));
      }
      watched_ = std::move(kept);
    }
  }

  std::function<void(std::size_t)> check_;
  std::function<void()> abort_;
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::vector<Watched> watched_;
  std::exception_ptr failure_;
  bool stopping_ = false;
  std::thread thread_;  ///< last: starts once the rest exists
};

}  // namespace stoke::cuda::detail

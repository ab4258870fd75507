#pragma once
/// @file
/// The I/O threads of a remote store: each keeps one libcurl handle (so its connections are
/// reused) and runs the parts of the transfers asked of the store, apart from decoding.

#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include <stoke/core/error.hpp>
#include <stoke/storage/remote/detail/curl_request.hpp>

namespace stoke::storage::detail {

/// A fixed set of I/O threads, each with its own `CurlEasy`. Threads do not survive `fork()`:
/// in a child process the pool refuses work (`StateError`) instead of waiting for threads that
/// are not there.
class IoPool {
 public:
  /// `threads` I/O threads (at least 1).
  explicit IoPool(std::size_t threads) : owner_(::getpid()) {
    if (threads == 0) throw UsageError("stoke: a remote store needs at least one I/O thread");
    workers_.reserve(threads);
    for (std::size_t i = 0; i < threads; ++i) workers_.emplace_back([this] { work(); });
  }
  IoPool(const IoPool&) = delete;
  IoPool& operator=(const IoPool&) = delete;
  ~IoPool() {
    if (::getpid() != owner_) {
      // A forked child: the threads are the parent's, and joinable std::threads may not be
      // destroyed; their handles are left (leaked) as they are.
      new std::vector<std::thread>(std::move(workers_));
      return;
    }
    {
      const std::lock_guard lock(mutex_);
      stopping_ = true;
    }
    wake_.notify_all();
    for (std::thread& worker : workers_) worker.join();
  }

  /// Runs `job(i, handle)` for every `i` in `[0, count)` on the I/O threads and waits for them.
  /// After a job throws, the jobs not yet started are skipped and the first exception is
  /// rethrown here. Not to be called from an I/O thread.
  void run_all(std::size_t count, const std::function<void(std::size_t, CurlEasy&)>& job) {
    if (::getpid() != owner_) {
      throw StateError(
          "stoke: a remote byte store was made before fork() and its I/O threads "
          "stayed in the parent: make the store in the child (after the fork)");
    }
    if (count == 0) return;
    auto batch = std::make_shared<Batch>();
    batch->count = count;
    const std::size_t drainers = std::min(count, workers_.size());
    batch->drainers = drainers;
    {
      const std::lock_guard lock(mutex_);
      for (std::size_t d = 0; d < drainers; ++d) {
        tasks_.emplace_back([batch, &job](CurlEasy& easy) { batch->drain(job, easy); });
      }
    }
    wake_.notify_all();
    std::unique_lock lock(batch->mutex);
    batch->done.wait(lock, [&] { return batch->drainers == 0; });
    if (batch->error) std::rethrow_exception(batch->error);
  }

 private:
  /// The jobs of one `run_all`, taken in order by the threads that drain them.
  struct Batch {
    std::size_t count = 0;
    std::atomic<std::size_t> next{0};
    std::atomic<bool> failed{false};
    std::mutex mutex;
    std::condition_variable done;
    std::size_t drainers = 0;
    std::exception_ptr error;

    void drain(const std::function<void(std::size_t, CurlEasy&)>& job, CurlEasy& easy) {
      for (std::size_t i = next++; i < count && !failed; i = next++) {
        try {
          job(i, easy);
        } catch (...) {
          const std::lock_guard lock(mutex);
          if (!error) error = std::current_exception();
          failed = true;
        }
      }
      const std::lock_guard lock(mutex);
      if (--drainers == 0) done.notify_all();
    }
  };

  void work() {
    CurlEasy easy;
    while (true) {
      std::function<void(CurlEasy&)> task;
      {
        std::unique_lock lock(mutex_);
        wake_.wait(lock, [&] { return stopping_ || !tasks_.empty(); });
        if (tasks_.empty()) return;
        task = std::move(tasks_.front());
        tasks_.pop_front();
      }
      task(easy);
    }
  }

  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<std::function<void(CurlEasy&)>> tasks_;
  bool stopping_ = false;
  std::vector<std::thread> workers_;
  ::pid_t owner_;  // the process whose threads these are
};

}  // namespace stoke::storage::detail

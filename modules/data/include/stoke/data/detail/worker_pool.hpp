#pragma once
/// @file
/// `WorkerPool`: the lifetime of a `MultiThreadLoader`'s worker threads (start, stop, join, and
/// a fork that leaves them behind); what they do is `WorkerPoolCore`'s.

#include <chrono>
#include <cstddef>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <utility>
#include <vector>

#include <stoke/core/error.hpp>
#include <stoke/core/fork.hpp>
#include <stoke/data/detail/batch_maker.hpp>
#include <stoke/data/detail/thread_names.hpp>
#include <stoke/data/detail/worker_pool_core.hpp>

namespace stoke::detail {

/// Threads that make the batches of one epoch at a time, delivered in step order (see
/// `WorkerPoolCore`, which holds what they share).
///
/// Dropping the pool stops the workers: a worker busy with a step finishes it first, then all
/// are joined. In a child forked after the pool was made, the pool is never used: dropping it
/// keeps its memory (`abandon`), and taking a batch throws `StateError`. With a batch timeout, a
/// worker still busy one timeout after the stop (stuck in a `get` that does not return) is detached
/// instead: it holds the pool's state and the epoch's dataset until it returns, and ends with the
/// process if it never does.
template <class Value>
class WorkerPool {
 public:
  /// The `worker` argument of a chunk the consumer makes in its own thread.
  static constexpr std::size_t consumer = consumer_thread;

  /// Spawns `workers` threads (at least one) with `depth` slots (at least one: the queue depth);
  /// `take` waits at most `batch_timeout` for one step (zero: without bound).
  WorkerPool(std::size_t workers, std::size_t depth,
             std::chrono::milliseconds batch_timeout = std::chrono::milliseconds::zero())
      : core_(std::make_shared<WorkerPoolCore<Value>>(workers, depth, batch_timeout)) {
    threads_.reserve(core_->size());
    for (std::size_t id = 0; id < core_->size(); ++id) {
      threads_.emplace_back([core = core_, id] { core->run(id); });
    }
  }
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  /// Stops the workers and joins them (see the class comment for stuck workers).
  ~WorkerPool() { close(); }

  /// Stops the workers and joins them now (see the class comment for stuck workers); a range
  /// that waits on this pool afterwards gets a `StateError`. Idempotent, and safe to call from
  /// several threads (the loader's owner and the thread dropping its last range).
  void close() {
    if (owner_.inherited()) {  // in a child: no thread to join, mutexes maybe held for good
      abandon(std::move(core_));
      abandon(std::move(threads_));
      return;
    }
    std::call_once(closed_, [this] {
      const auto deadline = core_->stop();
      for (std::size_t id = 0; id < threads_.size(); ++id) {
        if (core_->wait_exit(id, deadline)) {
          threads_[id].join();
        } else {
          threads_[id].detach();
        }
      }
    });
  }

  /// Starts an epoch of `num_steps` steps made by `maker`; returns its generation (see
  /// `WorkerPoolCore::start`).
  std::size_t start(std::size_t num_steps, std::shared_ptr<const BatchMaker<Value>> maker) {
    return core_->start(num_steps, std::move(maker));
  }
  /// The next value of epoch `generation` (see `WorkerPoolCore::take`); a `StateError` in a
  /// child forked after the pool was made (its workers are not there).
  std::optional<Value> take(std::size_t generation) {
    refuse_if_inherited();
    return core_->take(generation);
  }
  /// Waits until `take(generation)` would not wait, or `until` (see `WorkerPoolCore`).
  bool wait_until(std::size_t generation, std::chrono::steady_clock::time_point until) {
    refuse_if_inherited();
    return core_->wait_until(generation, until);
  }
  /// Cuts the consumer's wait for a step of epoch `generation` short (see `WorkerPoolCore`).
  void interrupt(std::size_t generation) {
    if (!owner_.inherited()) core_->interrupt(generation);
  }
  /// Abandons epoch `generation` if it is still the current one.
  void cancel(std::size_t generation) {
    if (!owner_.inherited()) core_->cancel(generation);
  }
  /// Whether this process is a child forked after the pool was made: its workers are gone, and
  /// the pool is never used again here (see <stoke/core/fork.hpp>).
  [[nodiscard]] bool inherited() const noexcept { return owner_.inherited(); }
  /// Number of worker threads.
  [[nodiscard]] std::size_t size() const noexcept { return core_->size(); }

 private:
  void refuse_if_inherited() const {
    if (owner_.inherited()) throw StateError(owner_.after_fork_message("this epoch's loader"));
  }

  OwnerProcess owner_;
  std::shared_ptr<WorkerPoolCore<Value>> core_;
  std::vector<std::thread> threads_;
  std::once_flag closed_;
};

}  // namespace stoke::detail

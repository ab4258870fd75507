#pragma once
/// @file
/// The persistent worker threads of a `MultiThreadLoader` and their bounded reorder window.

#include <condition_variable>
#include <cstddef>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <thread>
#include <vector>

namespace stoke::detail {

/// Threads that make the batches of one epoch at a time, delivered in step order.
///
/// Workers claim steps in increasing order but only up to `depth` steps ahead of the
/// consumer, so at most `depth` finished batches wait (plus the one the consumer holds).
/// Each result lands in slot `step % depth`; the consumer takes slot after slot, so the
/// order is the same for any number of workers. Starting a new epoch or cancelling bumps a
/// generation counter; results of an older generation are discarded.
template <class Value>
class WorkerPool {
 public:
  /// Makes the value of `step`; `worker` says which thread runs it.
  using Producer = std::function<Value(std::size_t step, std::size_t worker)>;

  /// Spawns `workers` threads (at least one) with a window of `depth` (at least one) steps.
  WorkerPool(std::size_t workers, std::size_t depth) : slots_(depth == 0 ? 1 : depth) {
    const std::size_t count = workers == 0 ? 1 : workers;
    threads_.reserve(count);
    for (std::size_t id = 0; id < count; ++id) threads_.emplace_back([this, id] { run(id); });
  }
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  /// Stops the workers; a worker busy with a batch finishes it first, then all are joined.
  ~WorkerPool() {
    {
      std::lock_guard lock(mutex_);
      stop_ = true;
    }
    work_ready_.notify_all();
    for (auto& thread : threads_) thread.join();
  }

  /// Starts an epoch of `num_steps` steps made by `producer`; returns its generation.
  /// An epoch still running is abandoned.
  std::size_t start(std::size_t num_steps, Producer producer) {
    std::size_t generation = 0;
    {
      std::lock_guard lock(mutex_);
      generation = ++generation_;
      producer_ = std::make_shared<const Producer>(std::move(producer));
      num_steps_ = num_steps;
      next_claim_ = 0;
      next_take_ = 0;
      for (auto& slot : slots_) slot.reset();
    }
    work_ready_.notify_all();
    return generation;
  }

  /// The next value of epoch `generation` in step order, `std::nullopt` after the last step.
  /// Rethrows the exception of a step that failed.
  std::optional<Value> take(std::size_t generation) {
    std::unique_lock lock(mutex_);
    if (generation != generation_) {
      throw std::logic_error(
          "stoke: this iter() range was superseded by a later iter() on the same loader");
    }
    if (next_take_ >= num_steps_) return std::nullopt;
    auto& slot = slots_[next_take_ % slots_.size()];
    result_ready_.wait(lock, [&] { return slot.has_value() || generation != generation_; });
    if (generation != generation_) {
      throw std::logic_error("stoke: this iter() range was cancelled while it waited for a batch");
    }
    Result result = std::move(*slot);
    slot.reset();
    ++next_take_;
    lock.unlock();
    work_ready_.notify_all();
    if (result.error) std::rethrow_exception(result.error);
    return std::move(result.value);
  }

  /// Abandons epoch `generation` if it is still the current one (its range was dropped).
  void cancel(std::size_t generation) {
    {
      std::lock_guard lock(mutex_);
      if (generation != generation_) return;
      ++generation_;
      num_steps_ = 0;
      producer_.reset();
      for (auto& slot : slots_) slot.reset();
    }
    work_ready_.notify_all();
  }

  /// Number of worker threads.
  [[nodiscard]] std::size_t size() const noexcept { return threads_.size(); }

 private:
  struct Result {
    std::optional<Value> value;
    std::exception_ptr error;
  };

  bool has_claimable_step() const {
    return next_claim_ < num_steps_ && next_claim_ < next_take_ + slots_.size();
  }

  void run(std::size_t id) {
    std::unique_lock lock(mutex_);
    for (;;) {
      work_ready_.wait(lock, [&] { return stop_ || has_claimable_step(); });
      if (stop_) return;
      const std::size_t step = next_claim_++;
      const std::size_t generation = generation_;
      const std::shared_ptr<const Producer> producer = producer_;
      lock.unlock();
      Result result;
      try {
        result.value.emplace((*producer)(step, id));
      } catch (...) {
        result.error = std::current_exception();
      }
      lock.lock();
      if (generation == generation_) {
        slots_[step % slots_.size()] = std::move(result);
        result_ready_.notify_all();
      }
    }
  }

  std::mutex mutex_;
  std::condition_variable work_ready_;
  std::condition_variable result_ready_;
  std::vector<std::optional<Result>> slots_;
  std::vector<std::thread> threads_;
  std::shared_ptr<const Producer> producer_;
  std::size_t generation_ = 0;
  std::size_t num_steps_ = 0;
  std::size_t next_claim_ = 0;
  std::size_t next_take_ = 0;
  bool stop_ = false;
};

}  // namespace stoke::detail

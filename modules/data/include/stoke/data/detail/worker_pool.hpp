#pragma once
/// @file
/// The persistent worker threads of a `MultiThreadLoader` and their bounded reorder window.

#include <algorithm>
#include <atomic>
#include <chrono>
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
///
/// A consumer that finds its batch not ready yet spins briefly before it sleeps, when recent
/// waits were short (small batches): a sleep and a wake-up cost more than such a wait.
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
      publish();
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
    const auto ready = [&] { return slot.has_value() || generation != generation_; };
    if (!ready()) wait_for_result(lock, ready);
    if (generation != generation_) {
      throw std::logic_error("stoke: this iter() range was cancelled while it waited for a batch");
    }
    Result result = std::move(*slot);
    slot.reset();
    ++next_take_;
    lock.unlock();
    work_ready_.notify_one();  // one slot freed: at most one more step to claim
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
      publish();
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

  /// How long a consumer may spin before it sleeps (a wait longer than that is not short).
  static constexpr std::chrono::nanoseconds max_spin{std::chrono::microseconds(50)};

  /// Waits, `lock` held, until `ready()`: spins (lock released, yielding the processor) for
  /// up to twice the last wait when that was short, then sleeps on `result_ready_`.
  /// Remembers how long it waited.
  template <class Ready>
  void wait_for_result(std::unique_lock<std::mutex>& lock, const Ready& ready) {
    const auto start = std::chrono::steady_clock::now();
    const auto deadline = start + spin_budget_;
    while (!ready() && std::chrono::steady_clock::now() < deadline) {
      const std::size_t seen = published_.load(std::memory_order_relaxed);
      lock.unlock();
      for (unsigned spins = 0; published_.load(std::memory_order_acquire) == seen; ++spins) {
        if (spins % 64 == 63 && std::chrono::steady_clock::now() >= deadline) break;
        std::this_thread::yield();
      }
      lock.lock();
    }
    result_ready_.wait(lock, ready);
    const auto waited = std::chrono::steady_clock::now() - start;
    spin_budget_ = waited < max_spin ? std::min<std::chrono::nanoseconds>(2 * waited, max_spin)
                                     : std::chrono::nanoseconds::zero();
  }

  /// Marks that a result landed or the generation changed (a spinning consumer looks).
  void publish() noexcept { published_.fetch_add(1, std::memory_order_release); }

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
        publish();
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
  std::atomic<std::size_t> published_ = 0;           ///< bumped by `publish()`
  std::chrono::nanoseconds spin_budget_ = max_spin;  ///< the consumer's next spin, at most
};

}  // namespace stoke::detail

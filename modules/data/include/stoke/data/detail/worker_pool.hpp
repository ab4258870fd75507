#pragma once
/// @file
/// The persistent worker threads of a `MultiThreadLoader` and their bounded reorder window.

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <exception>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include <stoke/core/error.hpp>
#include <stoke/data/detail/step_chunks.hpp>
#include <stoke/data/detail/thread_names.hpp>

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
///
/// When the epoch's `StepMaker` makes chunks, the step the consumer needs next (the head), when a
/// worker claims it while nothing is buffered (the start of an epoch, or after a stall), is made in
/// chunks
/// (`StepChunks`) to reach the consumer sooner:
/// - the workers and the waiting consumer take chunks until none are left, at most one
///   thread per processor at once; the other workers wait rather than start later steps;
/// - whoever makes the last chunk finishes the step. A consumer that does has its value
///   without a wake-up; a worker that does, while the consumer sleeps, waits (briefly) for
///   the consumer to take it before it goes on, leaving it a processor.
/// Other steps are made whole by `StepMaker::make`.
template <class Value>
class WorkerPool {
 public:
  /// The `worker` argument of a chunk the consumer makes in its own thread.
  static constexpr std::size_t consumer = consumer_thread;

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
    taken_.notify_all();  // a worker handing the processor over stops waiting
    for (auto& thread : threads_) thread.join();
  }

  /// Starts an epoch of `num_steps` steps made by `maker` (in chunks, when it makes chunks and
  /// the consumer waits with nothing buffered); returns its generation. An epoch still
  /// running is abandoned.
  std::size_t start(std::size_t num_steps, std::shared_ptr<const StepMaker<Value>> maker) {
    std::size_t generation = 0;
    {
      std::lock_guard lock(mutex_);
      generation = ++generation_;
      maker_ = std::move(maker);
      num_steps_ = num_steps;
      next_claim_ = 0;
      next_take_ = 0;
      open_.reset();
      opening_ = false;
      if (maker_->makes_chunks())
        spin_budget_ = max_spin;  // the first step is opened in microseconds
      for (auto& slot : slots_) slot.reset();
      publish();
    }
    work_ready_.notify_all();
    taken_.notify_all();  // a worker handing the processor over stops waiting
    return generation;
  }

  /// The next value of epoch `generation` in step order, `std::nullopt` after the last step.
  /// Rethrows the exception of a step that failed.
  std::optional<Value> take(std::size_t generation) {
    std::unique_lock lock(mutex_);
    if (generation != generation_) {
      throw StateError(
          "stoke: this iter() range was superseded by a later iter() on the same loader");
    }
    if (next_take_ >= num_steps_) return std::nullopt;
    auto& slot = slots_[next_take_ % slots_.size()];
    const auto ready = [&] { return slot.has_value() || generation != generation_; };
    const auto can_help = [&] { return can_make_chunk() && open_->step == next_take_; };
    consumer_waiting_ = true;
    while (!ready()) {
      if (can_help()) {
        make_open_chunk(lock, consumer);
      } else {
        wait_for_result(lock, [&] { return ready() || can_help(); });
      }
    }
    consumer_waiting_ = false;
    if (generation != generation_) {
      throw StateError("stoke: this iter() range was cancelled while it waited for a batch");
    }
    Result result = std::move(*slot);
    slot.reset();
    ++next_take_;
    lock.unlock();
    work_ready_.notify_one();  // one slot freed: at most one more step to claim
    taken_.notify_all();       // a worker handing the processor over can go on
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
      maker_.reset();
      open_.reset();
      opening_ = false;
      for (auto& slot : slots_) slot.reset();
      publish();
    }
    work_ready_.notify_all();
    taken_.notify_all();  // a worker handing the processor over stops waiting
  }

  /// Number of worker threads.
  [[nodiscard]] std::size_t size() const noexcept { return threads_.size(); }

 private:
  struct Result {
    std::optional<Value> value;
    std::exception_ptr error;
  };

  /// The head step while it is made in chunks.
  struct OpenStep {
    std::shared_ptr<StepChunks<Value>> chunks;
    std::size_t step = 0;
    std::size_t generation = 0;
    std::size_t count = 0;       ///< number of chunks
    std::size_t next_chunk = 0;  ///< the next chunk to claim
    std::size_t done = 0;        ///< chunks made
    std::size_t active = 0;      ///< threads making a chunk now
    std::exception_ptr error{};  ///< the first chunk that failed
  };

  /// How long a consumer may spin before it sleeps (a wait longer than that is not short).
  static constexpr std::chrono::nanoseconds max_spin{std::chrono::microseconds(50)};
  /// How long a worker that finished a step made in chunks waits for the consumer to take it.
  static constexpr std::chrono::microseconds max_hand_over{2000};

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

  /// Whether this thread may take a chunk of the open step now: one is left, and fewer threads
  /// than processors make chunks (one more would only take turns with them, and a thread
  /// descheduled in the middle of a chunk would hold the whole step back).
  bool can_make_chunk() const {
    return open_ && open_->next_chunk < open_->count && open_->active < max_chunk_makers_;
  }

  /// Stores the result of `step` unless its epoch was abandoned, and tells the consumer.
  void deliver(std::size_t step, std::size_t generation, Result result) {
    if (generation != generation_) return;
    slots_[step % slots_.size()] = std::move(result);
    publish();
    result_ready_.notify_all();
  }

  /// Claims and makes one chunk of the open step (`lock` held on entry and on return); the
  /// thread that makes its last chunk finishes the step and delivers it.
  void make_open_chunk(std::unique_lock<std::mutex>& lock, std::size_t worker) {
    const std::shared_ptr<OpenStep> open = open_;
    const std::size_t chunk = open->next_chunk++;
    ++open->active;
    lock.unlock();
    std::exception_ptr error;
    try {
      open->chunks->make_chunk(chunk, worker);
    } catch (...) {
      error = std::current_exception();
    }
    lock.lock();
    --open->active;
    if (error && !open->error) open->error = error;
    if (++open->done < open->count) return;
    if (open_ == open) {
      open_.reset();
      work_ready_.notify_all();  // the workers held back by the open step can claim steps
    }
    if (open->generation != generation_) return;
    Result result;
    if (open->error) {
      result.error = open->error;
    } else {
      lock.unlock();
      try {
        result.value.emplace(open->chunks->finish());
      } catch (...) {
        result.error = std::current_exception();
      }
      lock.lock();
    }
    const bool hand_over = worker != consumer && consumer_waiting_;
    deliver(open->step, open->generation, std::move(result));
    if (hand_over) {
      // The consumer sleeps on this step. Were this worker to go on to the next step, with
      // as many busy workers as processors the consumer would wait for a time slice to end
      // (milliseconds) before it could take it; waiting here leaves it a processor.
      taken_.wait_for(lock, max_hand_over, [&] {
        return stop_ || generation_ != open->generation || next_take_ > open->step;
      });
    }
  }

  /// Opens the head `step` of epoch `generation` for chunks (`lock` held on entry and on
  /// return, `opening_` set by the caller).
  void open_step(std::unique_lock<std::mutex>& lock, std::size_t step, std::size_t generation,
                 const std::shared_ptr<const StepMaker<Value>>& maker, std::size_t worker) {
    lock.unlock();
    std::shared_ptr<StepChunks<Value>> chunks;
    Result failed;
    try {
      chunks = maker->open(step, worker);
    } catch (...) {
      failed.error = std::current_exception();
    }
    lock.lock();
    if (generation != generation_) return;
    opening_ = false;
    if (!chunks) {
      deliver(step, generation, std::move(failed));
    } else {
      open_ = std::make_shared<OpenStep>(
          OpenStep{.chunks = std::move(chunks), .step = step, .generation = generation});
      open_->count = std::max<std::size_t>(1, open_->chunks->chunks());
      publish();
      result_ready_.notify_all();  // a consumer waiting for the head step can help
    }
    work_ready_.notify_all();  // idle workers can help, or claim later steps again
  }

  void run(std::size_t id) {
    std::unique_lock lock(mutex_);
    for (;;) {
      // While the head step is open, the workers that do not make its chunks wait: the
      // consumer needs it first.
      work_ready_.wait(lock, [&] {
        return stop_ || can_make_chunk() || (!opening_ && !open_ && has_claimable_step());
      });
      if (stop_) return;
      if (can_make_chunk()) {
        make_open_chunk(lock, id);
        continue;
      }
      const std::size_t step = next_claim_++;
      const std::size_t generation = generation_;
      const std::shared_ptr<const StepMaker<Value>> maker = maker_;
      if (maker->makes_chunks() && step == next_take_) {
        opening_ = true;  // the others wait for its chunks rather than claim later steps
        open_step(lock, step, generation, maker, id);
        continue;
      }
      lock.unlock();
      Result result;
      try {
        result.value.emplace(maker->make(step, id));
      } catch (...) {
        result.error = std::current_exception();
      }
      lock.lock();
      deliver(step, generation, std::move(result));
    }
  }

  std::mutex mutex_;
  std::condition_variable work_ready_;
  std::condition_variable result_ready_;
  std::condition_variable taken_;  ///< the consumer took a step
  std::vector<std::optional<Result>> slots_;
  std::vector<std::thread> threads_;
  std::shared_ptr<const StepMaker<Value>> maker_;  ///< makes the current epoch's steps
  std::shared_ptr<OpenStep> open_;                 ///< the head step while it is made in chunks
  bool opening_ = false;                           ///< a worker is opening the head step
  bool consumer_waiting_ = false;                  ///< the consumer waits in `take`
  /// The most threads that make chunks of the open step at once: one per processor.
  std::size_t max_chunk_makers_ = std::max(1U, std::thread::hardware_concurrency());
  std::size_t generation_ = 0;
  std::size_t num_steps_ = 0;
  std::size_t next_claim_ = 0;
  std::size_t next_take_ = 0;
  bool stop_ = false;
  std::atomic<std::size_t> published_ = 0;           ///< bumped by `publish()`
  std::chrono::nanoseconds spin_budget_ = max_spin;  ///< the consumer's next spin, at most
};

}  // namespace stoke::detail

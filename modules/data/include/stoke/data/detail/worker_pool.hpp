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
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <stoke/core/error.hpp>
#include <stoke/core/fork.hpp>
#include <stoke/data/detail/batch_maker.hpp>
#include <stoke/data/detail/thread_names.hpp>
#include <stoke/data/detail/worker_activity.hpp>

namespace stoke::detail {

/// The state and the logic of a `WorkerPool`: threads that make the batches of one epoch at a
/// time, delivered in step order. Its threads share it (`run`), so that a thread left stuck in a
/// `get` that never returns touches no freed memory.
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
/// When the epoch's `BatchMaker` makes chunks, the batch the consumer needs next (the head), when
/// a worker claims it while nothing is buffered (the start of an epoch, or after a stall), is
/// made in chunks (`BatchInChunks`) to reach the consumer sooner:
/// - the workers and the waiting consumer take chunks until none are left, at most one
///   thread per processor at once; the other workers wait rather than start later batches;
/// - whoever makes the last chunk finishes the batch. A consumer that does has its value
///   without a wake-up; a worker that does, while the consumer sleeps, waits (briefly) for
///   the consumer to take it before it goes on, leaving it a processor.
/// Other batches are made whole by `BatchMaker::make`.
///
/// With a batch timeout, a consumer that waits longer than that for one step throws a
/// `TimeoutError` naming every busy worker, its stage and the dataset index it reads.
template <class Value>
class WorkerPoolCore {
 public:
  /// The `worker` argument of a chunk the consumer makes in its own thread.
  static constexpr std::size_t consumer = consumer_thread;

  /// The state of `workers` threads (at least one) with a window of `depth` (at least one)
  /// steps; `batch_timeout` (zero: none) bounds the consumer's wait for one step.
  WorkerPoolCore(std::size_t workers, std::size_t depth, std::chrono::milliseconds batch_timeout)
      : slots_(depth == 0 ? 1 : depth),
        workers_(workers == 0 ? 1 : workers),
        activities_(std::make_unique<WorkerActivity[]>(workers_.size())),
        batch_timeout_(batch_timeout) {}
  WorkerPoolCore(const WorkerPoolCore&) = delete;
  WorkerPoolCore& operator=(const WorkerPoolCore&) = delete;
  ~WorkerPoolCore() = default;

  /// Tells the workers to stop once their current step is made; returns when to stop waiting
  /// for them (never without a batch timeout).
  std::chrono::steady_clock::time_point stop() {
    {
      std::lock_guard lock(mutex_);
      stop_ = true;
    }
    work_ready_.notify_all();
    taken_.notify_all();  // a worker handing the processor over stops waiting
    if (batch_timeout_.count() == 0) return std::chrono::steady_clock::time_point::max();
    return std::chrono::steady_clock::now() + batch_timeout_;
  }

  /// Waits until worker `id` has left `run`, or `deadline`; whether it has (a thread that has
  /// not is stuck: it keeps this state alive until it returns).
  bool wait_exit(std::size_t id, std::chrono::steady_clock::time_point deadline) {
    if (deadline == std::chrono::steady_clock::time_point::max()) return true;  // join waits
    std::unique_lock lock(mutex_);
    return exited_.wait_until(lock, deadline, [&] { return workers_[id].exited; });
  }

  /// Starts an epoch of `num_steps` steps made by `maker` (in chunks, when it makes chunks and
  /// the consumer waits with nothing buffered); returns its generation. An epoch still
  /// running is abandoned.
  std::size_t start(std::size_t num_steps, std::shared_ptr<const BatchMaker<Value>> maker) {
    std::size_t generation = 0;
    {
      std::lock_guard lock(mutex_);
      generation = ++generation_;
      maker_ = std::move(maker);
      num_steps_ = num_steps;
      next_claim_ = 0;
      next_take_ = 0;
      waiting_for_.reset();
      interrupted_ = false;
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
  /// Rethrows the exception of a step that failed; throws `InterruptedError` when `interrupt`
  /// cut the wait short (the step is then still the next one).
  std::optional<Value> take(std::size_t generation) {
    std::unique_lock lock(mutex_);
    if (generation != generation_) {
      throw StateError(
          "stoke: this iter() range was superseded by a later iter() on the same loader");
    }
    if (next_take_ >= num_steps_) return std::nullopt;
    await_step(lock, generation, std::chrono::steady_clock::time_point::max());
    if (generation != generation_) {
      throw StateError("stoke: this iter() range was cancelled while it waited for a batch");
    }
    auto& slot = slots_[next_take_ % slots_.size()];
    if (!slot.has_value() && stop_) {
      throw StateError(
          "stoke: the loader's workers were stopped (close()) while this iter() "
          "range waited for a batch");
    }
    if (!slot.has_value()) {
      interrupted_ = false;
      throw InterruptedError("stoke: the wait for step " + std::to_string(next_take_) +
                             " was interrupted; the batch is not lost: the next wait takes it");
    }
    Result result = std::move(*slot);
    slot.reset();
    ++next_take_;
    waiting_for_.reset();
    lock.unlock();
    work_ready_.notify_one();  // one slot freed: at most one more step to claim
    taken_.notify_all();       // a worker handing the processor over can go on
    if (result.error) std::rethrow_exception(result.error);
    return std::move(result.value);
  }

  /// Waits until `take(generation)` would return at once, or `until`; whether it would (also
  /// when it would throw: an epoch superseded, a failed step, an interrupt). Throws the
  /// `TimeoutError` of a step not ready within the batch timeout, counted from the first wait
  /// for it, so that a consumer waiting in slices (to look at signals) still times out.
  bool wait_until(std::size_t generation, std::chrono::steady_clock::time_point until) {
    std::unique_lock lock(mutex_);
    if (generation != generation_ || next_take_ >= num_steps_) return true;
    return await_step(lock, generation, until);
  }

  /// Makes the consumer's current wait for a step of epoch `generation`, or its next one, end
  /// in `InterruptedError` (from any thread). A step already made is still taken at once.
  void interrupt(std::size_t generation) {
    {
      std::lock_guard lock(mutex_);
      if (generation != generation_) return;
      interrupted_ = true;
      publish();
    }
    result_ready_.notify_all();
  }

  /// Abandons epoch `generation` if it is still the current one (its range was dropped).
  void cancel(std::size_t generation) {
    {
      std::lock_guard lock(mutex_);
      if (generation != generation_) return;
      ++generation_;
      num_steps_ = 0;
      waiting_for_.reset();
      interrupted_ = false;
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
  [[nodiscard]] std::size_t size() const noexcept { return workers_.size(); }

  /// The loop of worker `id`, until `stop()`.
  void run(std::size_t id) {
    this_thread_activity = &activities_[id];
    std::unique_lock lock(mutex_);
    for (;;) {
      // While the head batch is open, the workers that do not make its chunks wait: the
      // consumer needs it first.
      work_ready_.wait(lock, [&] {
        return stop_ || can_make_chunk() || (!opening_ && !open_ && has_claimable_step());
      });
      if (stop_) break;
      if (can_make_chunk()) {
        const Busy busy(*this, id, open_->step);
        make_open_chunk(lock, id);
        continue;
      }
      const std::size_t step = next_claim_++;
      const std::size_t generation = generation_;
      const std::shared_ptr<const BatchMaker<Value>> maker = maker_;
      const Busy busy(*this, id, step);
      if (maker->makes_chunks() && step == next_take_) {
        opening_ = true;  // the others wait for its chunks rather than claim later steps
        open_batch(lock, step, generation, maker, id);
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
    workers_[id].exited = true;
    exited_.notify_all();
  }

 private:
  /// What a worker thread is busy with (guarded by `mutex_`).
  struct WorkerState {
    bool busy = false;                              ///< making (a chunk of) a step
    std::size_t step = 0;                           ///< which step
    std::chrono::steady_clock::time_point since{};  ///< since when
    bool exited = false;                            ///< it has left `run`
  };

  /// Marks worker `id` busy with `step` for its lifetime (`mutex_` held at both ends).
  class Busy {
   public:
    Busy(WorkerPoolCore& pool, std::size_t id, std::size_t step) : state_(pool.workers_[id]) {
      state_.busy = true;
      state_.step = step;
      state_.since = std::chrono::steady_clock::now();
    }
    Busy(const Busy&) = delete;
    Busy& operator=(const Busy&) = delete;
    ~Busy() { state_.busy = false; }

   private:
    WorkerState& state_;
  };

  /// Throws the `TimeoutError` of `step` (`mutex_` held): the worker making it, or the one busy
  /// longest, is named as stuck; every busy worker is listed with its stage and index.
  [[noreturn]] void time_out(std::size_t step) const {
    const auto now = std::chrono::steady_clock::now();
    DataErrorContext where = maker_ ? maker_->where(step) : DataErrorContext{.step = step};
    std::string report = "stoke: batch timeout: step " + std::to_string(where.step) + " of epoch " +
                         std::to_string(where.epoch) + " for device " + where.device +
                         " was not ready within " + std::to_string(batch_timeout_.count()) + " ms";
    // The stuck worker: the one making `step`, else the one busy longest.
    const auto rank = [&](std::size_t id) {
      return std::pair(workers_[id].step != step, workers_[id].since);
    };
    std::optional<std::size_t> stuck;
    for (std::size_t id = 0; id < workers_.size(); ++id) {
      const WorkerState& worker = workers_[id];
      if (!worker.busy) continue;
      if (!stuck || rank(id) < rank(*stuck)) stuck = id;
      const auto busy_ms =
          std::chrono::duration_cast<std::chrono::milliseconds>(now - worker.since).count();
      const WorkerActivity& activity = activities_[id];
      report += "; " + thread_name(id) + " has been in " + stage_name(activity.stage()) +
                "(index " + std::to_string(activity.index()) + ") of step " +
                std::to_string(maker_ ? maker_->where(worker.step).step : worker.step) + " for " +
                std::to_string(busy_ms) + " ms";
    }
    if (stuck) {
      where.stage = stage_name(activities_[*stuck].stage());
      where.index = activities_[*stuck].index();
      where.worker = thread_name(*stuck);
    } else {
      report += "; no worker is busy";
    }
    throw TimeoutError(std::move(where), report);
  }

  struct Result {
    std::optional<Value> value;
    std::exception_ptr error;
  };

  /// The head batch while it is made in chunks.
  struct OpenBatch {
    std::shared_ptr<BatchInChunks<Value>> chunks;
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

  /// Waits (`lock` held) until step `next_take_` of `generation` is made, the epoch changes, an
  /// interrupt is pending, or `until`; whether one of the first three happened. Without a
  /// deadline the consumer makes chunks of the head batch meanwhile when it can. Throws the
  /// step's `TimeoutError` once
  /// the batch timeout has passed since the consumer first waited for that step.
  bool await_step(std::unique_lock<std::mutex>& lock, std::size_t generation,
                  std::chrono::steady_clock::time_point until) {
    auto& slot = slots_[next_take_ % slots_.size()];
    const auto ready = [&] {
      return slot.has_value() || generation != generation_ || interrupted_ || stop_;
    };
    const auto can_help = [&] { return can_make_chunk() && open_->step == next_take_; };
    if (ready()) return true;
    if (waiting_for_ != next_take_) {
      waiting_for_ = next_take_;
      waiting_since_ = std::chrono::steady_clock::now();
    }
    const auto timeout_at = batch_timeout_.count() == 0
                                ? std::chrono::steady_clock::time_point::max()
                                : waiting_since_ + batch_timeout_;
    consumer_waiting_ = true;
    // A wait with a deadline makes no chunk: one may take longer than the deadline allows.
    const bool may_help = until == std::chrono::steady_clock::time_point::max();
    while (!ready()) {
      if (may_help && can_help()) {
        make_open_chunk(lock, consumer);
      } else if (!wait_for_result(
                     lock, [&] { return ready() || (may_help && can_help()); },
                     std::min(until, timeout_at))) {
        consumer_waiting_ = false;
        if (std::chrono::steady_clock::now() >= timeout_at) time_out(next_take_);
        return false;
      }
    }
    consumer_waiting_ = false;
    return true;
  }

  /// Waits, `lock` held, until `ready()` or `give_up`: spins (lock released, yielding the
  /// processor) for up to twice the last wait when that was short, then sleeps on
  /// `result_ready_`. Remembers how long it waited; whether `ready()`.
  template <class Ready>
  bool wait_for_result(std::unique_lock<std::mutex>& lock, const Ready& ready,
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

  /// Marks that a result landed or the generation changed (a spinning consumer looks).
  void publish() noexcept { published_.fetch_add(1, std::memory_order_release); }

  bool has_claimable_step() const {
    return next_claim_ < num_steps_ && next_claim_ < next_take_ + slots_.size();
  }

  /// Whether this thread may take a chunk of the open batch now: one is left, and fewer threads
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

  /// Claims and makes one chunk of the open batch (`lock` held on entry and on return); the
  /// thread that makes its last chunk finishes the batch and delivers it.
  void make_open_chunk(std::unique_lock<std::mutex>& lock, std::size_t worker) {
    const std::shared_ptr<OpenBatch> open = open_;
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
      work_ready_.notify_all();  // the workers held back by the open batch can claim steps
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

  /// Opens the head batch (`step`) of epoch `generation` for chunks (`lock` held on entry and on
  /// return, `opening_` set by the caller).
  void open_batch(std::unique_lock<std::mutex>& lock, std::size_t step, std::size_t generation,
                  const std::shared_ptr<const BatchMaker<Value>>& maker, std::size_t worker) {
    lock.unlock();
    std::shared_ptr<BatchInChunks<Value>> chunks;
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
      open_ = std::make_shared<OpenBatch>(
          OpenBatch{.chunks = std::move(chunks), .step = step, .generation = generation});
      open_->count = std::max<std::size_t>(1, open_->chunks->chunks());
      publish();
      result_ready_.notify_all();  // a consumer waiting for the head batch can help
    }
    work_ready_.notify_all();  // idle workers can help, or claim later steps again
  }

  std::mutex mutex_;
  std::condition_variable work_ready_;
  std::condition_variable result_ready_;
  std::condition_variable taken_;   ///< the consumer took a step
  std::condition_variable exited_;  ///< a worker left `run`
  std::vector<std::optional<Result>> slots_;
  std::vector<WorkerState> workers_;
  std::unique_ptr<WorkerActivity[]> activities_;    ///< what each worker reads, for `time_out`
  std::chrono::milliseconds batch_timeout_;         ///< zero: the consumer waits without bound
  std::shared_ptr<const BatchMaker<Value>> maker_;  ///< makes the current epoch's steps
  std::shared_ptr<OpenBatch> open_;                 ///< the head batch while it is made in chunks
  bool opening_ = false;                            ///< a worker is opening the head batch
  bool consumer_waiting_ = false;                   ///< the consumer waits in `take`
  /// The most threads that make chunks of the open batch at once: one per processor.
  std::size_t max_chunk_makers_ = std::max(1U, std::thread::hardware_concurrency());
  std::size_t generation_ = 0;
  std::size_t num_steps_ = 0;
  std::size_t next_claim_ = 0;
  std::size_t next_take_ = 0;
  std::optional<std::size_t> waiting_for_;                 ///< the step the consumer waits for
  std::chrono::steady_clock::time_point waiting_since_{};  ///< since its first wait for it
  bool interrupted_ = false;                               ///< an `interrupt` not yet thrown
  bool stop_ = false;
  std::atomic<std::size_t> published_ = 0;           ///< bumped by `publish()`
  std::chrono::nanoseconds spin_budget_ = max_spin;  ///< the consumer's next spin, at most
};

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

  /// Spawns `workers` threads (at least one) with a window of `depth` (at least one) steps;
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

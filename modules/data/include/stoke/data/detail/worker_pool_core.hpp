#pragma once
/// @file
/// `WorkerPoolCore`: what the threads of a `WorkerPool` share, and their loop: who claims which
/// step, who makes the chunks of the head batch, and how the consumer takes steps in order.

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <exception>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>

#include <stoke/core/error.hpp>
#include <stoke/data/detail/batch_maker.hpp>
#include <stoke/data/detail/busy_workers.hpp>
#include <stoke/data/detail/consumer_wait.hpp>
#include <stoke/data/detail/head_batch.hpp>
#include <stoke/data/detail/step_slots.hpp>
#include <stoke/data/detail/thread_names.hpp>
#include <stoke/data/detail/worker_activity.hpp>

namespace stoke::detail {

/// The state and the logic of a `WorkerPool`: threads that make the batches of one epoch at a
/// time, delivered in step order through its `StepSlots`. Its threads share it (`run`), so that
/// a thread left stuck in a `get` that never returns touches no freed memory.
///
/// When the epoch's `BatchMaker` makes chunks, the batch the consumer needs next (the head), when
/// a worker claims it while nothing is buffered (the start of an epoch, or after a stall), is
/// made in chunks (`HeadBatch`) to reach the consumer sooner:
/// - the workers and the waiting consumer take chunks until none are left, at most one
///   thread per processor at once; the other workers wait rather than start later batches;
/// - whoever makes the last chunk finishes the batch. A consumer that does has its value
///   without a wake-up; a worker that does, while the consumer sleeps, waits (briefly) for
///   the consumer to take it before it goes on, leaving it a processor.
/// Other batches are made whole by `BatchMaker::make`.
///
/// The consumer waits as `ConsumerWait` says (spin, then sleep). With a batch timeout, a consumer
/// that waits longer than that for one step throws a `TimeoutError` naming every busy worker,
/// its activity and the dataset index it reads (`BusyWorkers::time_out`).
template <class Value>
class WorkerPoolCore {
 public:
  /// The `worker` argument of a chunk the consumer makes in its own thread.
  static constexpr std::size_t consumer = consumer_thread;

  /// The state of `workers` threads (at least one) with `depth` slots (at least one: the queue
  /// depth); `batch_timeout` (zero: none) bounds the consumer's wait for one step.
  WorkerPoolCore(std::size_t workers, std::size_t depth, std::chrono::milliseconds batch_timeout)
      : slots_(depth), workers_(workers), timeout_(batch_timeout) {}
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
    return timeout_.stop_deadline();
  }

  /// Waits until worker `id` has left `run`, or `deadline`; whether it has (a thread that has
  /// not is stuck: it keeps this state alive until it returns).
  bool wait_exit(std::size_t id, std::chrono::steady_clock::time_point deadline) {
    if (deadline == std::chrono::steady_clock::time_point::max()) return true;  // join waits
    std::unique_lock lock(mutex_);
    return exited_.wait_until(lock, deadline, [&] { return workers_.exited(id); });
  }

  /// Starts an epoch of `num_steps` steps made by `maker` (in chunks, when it makes chunks and
  /// the consumer waits with nothing buffered); returns its generation. An epoch still
  /// running is abandoned.
  std::size_t start(std::size_t num_steps, std::shared_ptr<const BatchMaker<Value>> maker) {
    std::size_t generation = 0;
    {
      std::lock_guard lock(mutex_);
      generation = slots_.start(num_steps);
      maker_ = std::move(maker);
      timeout_.forget();
      interrupted_ = false;
      head_.reset();
      opening_ = false;
      if (maker_->makes_chunks()) wait_.expect_short_wait();
      wait_.publish();
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
    if (generation != slots_.generation()) {
      throw StateError(
          "stoke: this iter() range was superseded by a later iter() on the same loader");
    }
    if (slots_.all_taken()) return std::nullopt;
    await_step(lock, generation, std::chrono::steady_clock::time_point::max());
    if (generation != slots_.generation()) {
      throw StateError("stoke: this iter() range was cancelled while it waited for a batch");
    }
    if (!slots_.head_ready() && stop_) {
      throw StateError(
          "stoke: the loader's workers were stopped (close()) while this iter() "
          "range waited for a batch");
    }
    if (!slots_.head_ready()) {
      interrupted_ = false;
      throw InterruptedError("stoke: the wait for step " + std::to_string(slots_.head_step()) +
                             " was interrupted; the batch is not lost: the next wait takes it");
    }
    Result result = slots_.take_head();
    timeout_.forget();
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
    if (generation != slots_.generation() || slots_.all_taken()) return true;
    return await_step(lock, generation, until);
  }

  /// Makes the consumer's current wait for a step of epoch `generation`, or its next one, end
  /// in `InterruptedError` (from any thread). A step already made is still taken at once.
  void interrupt(std::size_t generation) {
    {
      std::lock_guard lock(mutex_);
      if (generation != slots_.generation()) return;
      interrupted_ = true;
      wait_.publish();
    }
    wait_.wake();
  }

  /// Abandons epoch `generation` if it is still the current one (its range was dropped).
  void cancel(std::size_t generation) {
    {
      std::lock_guard lock(mutex_);
      if (generation != slots_.generation()) return;
      slots_.cancel();
      timeout_.forget();
      interrupted_ = false;
      maker_.reset();
      head_.reset();
      opening_ = false;
      wait_.publish();
    }
    work_ready_.notify_all();
    taken_.notify_all();  // a worker handing the processor over stops waiting
  }

  /// Number of worker threads.
  [[nodiscard]] std::size_t size() const noexcept { return workers_.size(); }

  /// The loop of worker `id`, until `stop()`.
  void run(std::size_t id) {
    this_thread_activity = &workers_.activity(id);
    std::unique_lock lock(mutex_);
    for (;;) {
      // While the head batch is open, the workers that do not make its chunks wait: the
      // consumer needs it first.
      work_ready_.wait(lock, [&] {
        return stop_ || can_make_chunk() || (!opening_ && !head_ && slots_.has_claimable_step());
      });
      if (stop_) break;
      if (can_make_chunk()) {
        const Busy busy(workers_, id, head_->step());
        make_head_chunk(lock, id);
        continue;
      }
      const std::size_t step = slots_.claim();
      const std::size_t generation = slots_.generation();
      const std::shared_ptr<const BatchMaker<Value>> maker = maker_;
      const Busy busy(workers_, id, step);
      if (maker->makes_chunks() && step == slots_.head_step()) {
        opening_ = true;  // the others wait for its chunks rather than claim later steps
        open_head(lock, step, generation, maker, id);
        continue;
      }
      lock.unlock();
      Result result = Result::attempt([&] { return maker->make(step, id); });
      lock.lock();
      deliver(step, generation, std::move(result));
    }
    workers_.mark_exited(id);
    exited_.notify_all();
  }

 private:
  using Result = StepResult<Value>;
  using Busy = BusyWorkers::Busy;

  /// How long a worker that finished a step made in chunks waits for the consumer to take it.
  static constexpr std::chrono::microseconds max_hand_over{2000};

  /// Waits (`lock` held) until the head step of `generation` is made, the epoch changes, an
  /// interrupt is pending, or `until`; whether one of the first three happened. Without a
  /// deadline the consumer makes chunks of the head batch meanwhile when it can. Throws the
  /// step's `TimeoutError` once the batch timeout has passed since the consumer first waited
  /// for that step.
  bool await_step(std::unique_lock<std::mutex>& lock, std::size_t generation,
                  std::chrono::steady_clock::time_point until) {
    const auto ready = [&] {
      return slots_.head_ready() || generation != slots_.generation() || interrupted_ || stop_;
    };
    const auto can_help = [&] { return can_make_chunk() && head_->step() == slots_.head_step(); };
    if (ready()) return true;
    const auto timeout_at = timeout_.deadline(slots_.head_step());
    consumer_waiting_ = true;
    // A wait with a deadline makes no chunk: one may take longer than the deadline allows.
    const bool may_help = until == std::chrono::steady_clock::time_point::max();
    while (!ready()) {
      if (may_help && can_help()) {
        make_head_chunk(lock, consumer);
      } else if (!wait_.wait(
                     lock, [&] { return ready() || (may_help && can_help()); },
                     std::min(until, timeout_at))) {
        consumer_waiting_ = false;
        if (std::chrono::steady_clock::now() >= timeout_at) {
          workers_.time_out(slots_.head_step(), maker_.get(), timeout_.limit());
        }
        return false;
      }
    }
    consumer_waiting_ = false;
    return true;
  }

  /// Whether this thread may take a chunk of the head batch now (see `HeadBatch::can_claim`).
  bool can_make_chunk() const { return head_ && head_->can_claim(max_chunk_makers_); }

  /// Stores the result of `step` unless its epoch was abandoned, and tells the consumer.
  void deliver(std::size_t step, std::size_t generation, Result result) {
    if (!slots_.deliver(step, generation, std::move(result))) return;
    wait_.publish();
    wait_.wake();
  }

  /// Claims and makes one chunk of the head batch (`lock` held on entry and on return); the
  /// thread that makes its last chunk finishes the batch and delivers it.
  void make_head_chunk(std::unique_lock<std::mutex>& lock, std::size_t worker) {
    const std::shared_ptr<HeadBatch<Value>> head = head_;
    const std::size_t chunk = head->claim();
    lock.unlock();
    std::exception_ptr error = head->make_chunk(chunk, worker);
    lock.lock();
    if (!head->finish_chunk(chunk, std::move(error))) return;
    if (head_ == head) {
      head_.reset();
      work_ready_.notify_all();  // the workers held back by the head batch can claim steps
    }
    if (head->generation() != slots_.generation()) return;
    lock.unlock();
    Result result = head->result();
    lock.lock();
    const bool hand_over = worker != consumer && consumer_waiting_;
    deliver(head->step(), head->generation(), std::move(result));
    if (hand_over) {
      // The consumer sleeps on this step. Were this worker to go on to the next step, with
      // as many busy workers as processors the consumer would wait for a time slice to end
      // (milliseconds) before it could take it; waiting here leaves it a processor.
      taken_.wait_for(lock, max_hand_over, [&] {
        return stop_ || slots_.generation() != head->generation() ||
               slots_.head_step() > head->step();
      });
    }
  }

  /// Opens the head batch (`step`) of epoch `generation` for chunks (`lock` held on entry and on
  /// return, `opening_` set by the caller).
  void open_head(std::unique_lock<std::mutex>& lock, std::size_t step, std::size_t generation,
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
    if (generation != slots_.generation()) return;
    opening_ = false;
    if (!chunks) {
      deliver(step, generation, std::move(failed));
    } else {
      const std::size_t chunk_count = chunks->chunks();
      head_ = std::make_shared<HeadBatch<Value>>(std::move(chunks), chunk_count, step, generation);
      wait_.publish();
      wait_.wake();  // a consumer waiting for the head batch can help
    }
    work_ready_.notify_all();  // idle workers can help, or claim later steps again
  }

  std::mutex mutex_;
  std::condition_variable work_ready_;
  std::condition_variable taken_;   ///< the consumer took a step
  std::condition_variable exited_;  ///< a worker left `run`
  StepSlots<Value> slots_;          ///< the steps between the workers and the consumer
  BusyWorkers workers_;             ///< what each worker is busy with, for `time_out`
  ConsumerWait wait_;               ///< how the consumer waits for a step
  BatchTimeout timeout_;            ///< how long it may wait
  std::shared_ptr<const BatchMaker<Value>> maker_;  ///< makes the current epoch's steps
  std::shared_ptr<HeadBatch<Value>> head_;          ///< the head batch while it is made in chunks
  bool opening_ = false;                            ///< a worker is opening the head batch
  bool consumer_waiting_ = false;                   ///< the consumer waits in `take`
  std::size_t max_chunk_makers_ = max_chunk_makers();  ///< threads making chunks at once, at most
  bool interrupted_ = false;                           ///< an `interrupt` not yet thrown
  bool stop_ = false;
};

}  // namespace stoke::detail

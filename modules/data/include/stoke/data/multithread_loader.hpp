#pragma once
/// @file
/// `MultiThreadLoader`: persistent worker threads, started on the first `iter()`, deliver
/// batches in order, at most the queue depth of them made ahead of the consumer.

#include <chrono>
#include <cstddef>
#include <memory>
#include <optional>
#include <utility>

#include <stoke/data/batch_range.hpp>
#include <stoke/data/batcher.hpp>
#include <stoke/data/detail/loader_base.hpp>
#include <stoke/data/detail/worker_pool.hpp>

namespace stoke {

/// A loader whose batches are made by `options().num_workers` threads.
///
/// - Lazy: no thread exists before the first `iter()`; copies and slices start their own.
/// - Persistent: the threads serve every later epoch, and are joined when the loader and
///   its last range are dropped (a worker busy with a batch finishes that batch first), or by
///   `close()`.
/// - Fork-safe: in a child forked while it had workers, its next `iter()` starts new ones
///   there; an epoch begun before the fork throws `StateError` (<stoke/core/fork.hpp>).
/// - Ordered: batches arrive in step order, identical to `BatchLoader`'s for any number of
///   workers; at most `options().queue_depth` batches wait ahead of the consumer.
/// - Quick to start: with a `ChunkedBatcher`, the batch the consumer waits for with nothing
///   buffered (the first of an epoch) is filled by the workers and the consumer together.
/// - Errors reach the consumer: a failed `get` or `batch` is rethrown by the iterator as a
///   `DataError` naming the dataset index, the worker and the device; with a `batch_timeout`,
///   a batch that hangs ends in a `TimeoutError` naming the stuck worker and index.
/// With `num_workers == 0` batches are made in the caller's thread, as by `BatchLoader`.
template <Dataset S, class T, Backend B>
class MultiThreadLoader : public detail::LoaderBase<MultiThreadLoader<S, T, B>, S, T, B> {
  using Base = detail::LoaderBase<MultiThreadLoader<S, T, B>, S, T, B>;
  using Pool = detail::WorkerPool<typename Base::batch_type>;

 public:
  using Base::Base;
  using typename Base::batch_type;
  using typename Base::device_type;

  /// A copy shares the dataset and batcher but not the threads; it starts its own lazily.
  MultiThreadLoader(const MultiThreadLoader& other) : Base(other) {}
  MultiThreadLoader& operator=(const MultiThreadLoader& other) {
    if (this != &other) {
      Base::operator=(other);
      pool_.reset();
    }
    return *this;
  }
  MultiThreadLoader(MultiThreadLoader&&) noexcept = default;
  MultiThreadLoader& operator=(MultiThreadLoader&&) noexcept = default;
  ~MultiThreadLoader() = default;

  /// The batches of the next epoch, in order; advances the epoch. Starts the workers on the
  /// first call. A range still open from an earlier call is abandoned.
  [[nodiscard]] BatchRange<batch_type> iter() {
    if (this->options().num_workers == 0) return this->iter_in_caller();
    if (pool_ && pool_->inherited()) {
      detail::abandon(std::move(pool_));  // forked: its workers are not in this process
      pool_.reset();
    }
    if (!pool_) {
      pool_ = std::make_shared<Pool>(this->options().num_workers, this->options().queue_depth,
                                     this->options().batch_timeout);
    }
    // A few chunks per thread that can fill them (the workers and the consumer), so that a
    // thread descheduled in the middle of a chunk holds back little of the batch.
    auto batches = this->begin_epoch(chunks_per_thread * (pool_->size() + 1));
    // Read before the move: argument evaluation order is unspecified (gcc moves first).
    const std::size_t num_batches = batches->num_batches();
    const std::size_t generation = pool_->start(num_batches, std::move(batches));
    return BatchRange<batch_type>(std::make_unique<PoolFeed>(pool_, generation, this->progress()));
  }

  /// Stops the worker threads now and joins them (a worker busy with a batch finishes it
  /// first); a range still open gets a `StateError` at its next wait. A later `iter()` starts
  /// new workers.
  void close() {
    if (!pool_) return;
    pool_->close();
    pool_.reset();
  }

  /// Whether the worker threads have been started (they start on the first `iter()`).
  [[nodiscard]] bool workers_started() const noexcept { return pool_ != nullptr; }

 private:
  /// Chunks (row ranges) a batch made in chunks is cut into, per thread that fills them.
  static constexpr std::size_t chunks_per_thread = 4;

  /// Takes the epoch's batches from the workers in order; cancels the rest when dropped.
  class PoolFeed final : public detail::LoaderFeed<batch_type> {
   public:
    PoolFeed(std::shared_ptr<Pool> pool, std::size_t generation,
             std::shared_ptr<detail::Progress> progress)
        : detail::LoaderFeed<batch_type>(std::move(progress)),
          pool_(std::move(pool)),
          generation_(generation) {}
    void cancel() noexcept override { pool_->cancel(generation_); }
    bool wait_until(std::chrono::steady_clock::time_point until) override {
      return pool_->wait_until(generation_, until);
    }
    void interrupt() noexcept override { pool_->interrupt(generation_); }

   private:
    std::optional<batch_type> produce() override { return pool_->take(generation_); }

    std::shared_ptr<Pool> pool_;
    std::size_t generation_;
  };

  std::shared_ptr<Pool> pool_;
};

}  // namespace stoke

#pragma once
/// @file
/// `MultiThreadLoader`: persistent worker threads, started on the first `iter()`, deliver
/// batches in order through a bounded window.

#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include <stoke/data/batcher.hpp>
#include <stoke/data/detail/batch_range.hpp>
#include <stoke/data/detail/loader_base.hpp>
#include <stoke/data/detail/worker_pool.hpp>

namespace stoke {

/// A loader whose batches are made by `options().num_workers` threads.
///
/// - Lazy: no thread exists before the first `iter()`; copies and slices start their own.
/// - Persistent: the threads serve every later epoch, and are joined when the loader and
///   its last range are dropped (a worker busy with a batch finishes that batch first).
/// - Ordered: batches arrive in step order, identical to `BatchLoader`'s for any number of
///   workers; at most `options().prefetch` batches wait ahead of the consumer.
/// - Quick to start: with a `PartBatcher`, the batch the consumer waits for with nothing
///   buffered (the first of an epoch) is filled by the workers and the consumer together.
/// - Errors reach the consumer: a failed `get` or `batch` is rethrown by the iterator as a
///   `DataError` naming the dataset index, the worker and the device.
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
  [[nodiscard]] detail::BatchRange<batch_type> iter() {
    if (this->options().num_workers == 0) return this->iter_in_caller();
    if (!pool_) {
      pool_ = std::make_shared<Pool>(this->options().num_workers, this->options().prefetch);
    }
    auto work = this->begin_epoch();
    const Base& loader = *this;
    typename Pool::Producer produce = [loader, work](std::size_t step, std::size_t worker) {
      return loader.make_batch(*work, step, worker_name(worker));
    };
    typename Pool::Opener open;
    if constexpr (PartBatcher<T, B, typename Base::item_type>) {
      // A few parts per thread that can fill them (the workers and the consumer), so that a
      // thread descheduled in the middle of a part holds back little of the batch.
      const std::size_t max_parts = parts_per_thread * (pool_->size() + 1);
      open = [loader, work, max_parts](std::size_t step, std::size_t worker) {
        return loader.open_batch(*work, step, max_parts, worker_name(worker), &worker_name);
      };
    }
    const std::size_t generation =
        pool_->start(work->layout.num_batches, std::move(produce), std::move(open));
    return this->deliver([pool = pool_, generation] { return pool->take(generation); },
                         [pool = pool_, generation] { pool->cancel(generation); });
  }

  /// Whether the worker threads have been started (they start on the first `iter()`).
  [[nodiscard]] bool workers_started() const noexcept { return pool_ != nullptr; }

 private:
  /// Row ranges a batch made in parts is cut into, per thread that fills them.
  static constexpr std::size_t parts_per_thread = 4;

  /// How errors name the thread that made a batch or part.
  static std::string worker_name(std::size_t worker) {
    return worker == Pool::consumer ? std::string("consumer") : "worker " + std::to_string(worker);
  }

  std::shared_ptr<Pool> pool_;
};

}  // namespace stoke

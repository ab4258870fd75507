#pragma once
/// @file
/// `BatchRange`: what every loader's `iter()` returns, one epoch's batches as a single-pass
/// input range; `BatchFeed`, where those batches come from; and `detail::LoaderFeed`, a
/// loader's feed, which counts the batches it hands over in the loader's `detail::Progress`.

#include <chrono>
#include <cstddef>
#include <iterator>
#include <memory>
#include <mutex>
#include <optional>
#include <utility>

#include <stoke/core/error.hpp>

namespace stoke {

/// The producer behind a `BatchRange`: the caller's thread, a loader's workers or a prefetch
/// pipeline.
template <class Value>
class BatchFeed {
 public:
  BatchFeed() = default;
  BatchFeed(const BatchFeed&) = delete;
  BatchFeed& operator=(const BatchFeed&) = delete;
  virtual ~BatchFeed() = default;

  /// The next batch, waiting until it is ready; `std::nullopt` after the last one. Rethrows
  /// the failure of the batch it waited for.
  virtual std::optional<Value> next() = 0;
  /// Called once when the range is dropped, also mid-epoch: stops making batches.
  virtual void cancel() noexcept {}
  /// Waits until `next()` would not wait, or `until`; whether it would not. A feed that cannot
  /// wait with a deadline (it makes batches in the caller's thread) says true.
  virtual bool wait_until(std::chrono::steady_clock::time_point /*until*/) { return true; }
  /// From any thread: makes the current wait in `next()`, else the next one, throw
  /// `InterruptedError` without taking a batch. A feed that cannot wait does nothing.
  virtual void interrupt() noexcept {}
};

/// One epoch's batches, in order, as a single-pass input range.
///
/// 1. `begin()` starts the pass: it waits for the first batch (the loader's workers have
///    started on it in `iter()`). Later calls return an iterator at the current batch.
/// 2. `*it` is the current batch, which the loop body may move from; `++it` waits for the
///    next. `it == end()` once the epoch is over.
/// 3. Dropping the range, also mid-epoch, cancels the batches not yet taken; a loader's next
///    `iter()` supersedes a range still open.
/// 4. `interrupt()`, from any thread, ends a wait for a batch promptly with `InterruptedError`;
///    the batch is not lost: `begin()` or `++it` afterwards waits for it again. `wait_until`
///    waits with a deadline (a consumer that looks at signals or a flag meanwhile).
/// A loader's `state()`, taken in the loop body, counts the batch being processed.
template <class Value>
class BatchRange {
 public:
  /// The range over the batches `feed` produces.
  explicit BatchRange(std::unique_ptr<BatchFeed<Value>> feed) : feed_(std::move(feed)) {}
  BatchRange(const BatchRange&) = delete;
  BatchRange& operator=(const BatchRange&) = delete;
  BatchRange(BatchRange&& other) noexcept = default;
  BatchRange& operator=(BatchRange&&) = delete;
  ~BatchRange() {
    if (feed_) feed_->cancel();
  }

  /// The range's iterator: `*it` is the current batch, `++it` waits for the next one.
  class iterator {
   public:
    using value_type = Value;
    using difference_type = std::ptrdiff_t;
    using iterator_concept = std::input_iterator_tag;

    iterator() = default;
    /// An iterator at `range`'s current batch.
    explicit iterator(BatchRange* range) : range_(range) {}
    /// The current batch.
    Value& operator*() const { return *range_->current_; }
    /// The current batch's members.
    Value* operator->() const { return &*range_->current_; }
    /// Waits for the next batch.
    iterator& operator++() {
      range_->advance();
      return *this;
    }
    /// Waits for the next batch.
    void operator++(int) { ++*this; }
    /// Whether the epoch is over.
    bool operator==(std::default_sentinel_t) const {
      return range_ == nullptr || !range_->current_.has_value();
    }

   private:
    BatchRange* range_ = nullptr;
  };

  /// Starts the pass on the first call (waits for the first batch); an iterator at the
  /// current batch.
  iterator begin() {
    if (!started_ || interrupted_) {
      started_ = true;
      advance();
    }
    return iterator(this);
  }
  /// The end of the epoch.
  std::default_sentinel_t end() const noexcept { return {}; }

  /// Waits until the batch that `begin()` or `++it` hands out next is ready, or `until`;
  /// whether it is (also when taking it would throw).
  bool wait_until(std::chrono::steady_clock::time_point until) { return feed_->wait_until(until); }
  /// From any thread: ends the consumer's wait for a batch (the current one, else the next)
  /// with `InterruptedError`, promptly; the batch waited for is handed out by the next
  /// `begin()` or `++it`.
  void interrupt() noexcept { feed_->interrupt(); }

 private:
  void advance() {
    current_.reset();
    try {
      current_ = feed_->next();
      interrupted_ = false;
    } catch (const InterruptedError&) {
      interrupted_ = true;  // `begin()` waits for the same batch again
      throw;
    }
  }

  std::unique_ptr<BatchFeed<Value>> feed_;
  std::optional<Value> current_;
  bool started_ = false;
  bool interrupted_ = false;  ///< the last wait was interrupted: no batch was taken
};

namespace detail {

/// How far the consumer got in the epoch it iterates; shared with that epoch's feed.
struct Progress {
  std::mutex mutex;
  bool active = false;        ///< an epoch was started with `iter()`
  std::size_t epoch = 0;      ///< the epoch started last
  std::size_t delivered = 0;  ///< its batches handed to the consumer
  std::size_t num_batches = 0;
  std::size_t offset = 0;  ///< positions of that epoch skipped on resume
};

/// A loader's feed: counts each batch it hands to the consumer in the loader's progress.
template <class Value>
class LoaderFeed : public BatchFeed<Value> {
 public:
  /// A feed that counts its batches in `progress`.
  explicit LoaderFeed(std::shared_ptr<Progress> progress) : progress_(std::move(progress)) {}

  std::optional<Value> next() final {
    std::optional<Value> batch = produce();
    if (batch) {
      const std::lock_guard lock(progress_->mutex);
      ++progress_->delivered;
    }
    return batch;
  }

 protected:
  /// The next batch, `std::nullopt` after the last.
  virtual std::optional<Value> produce() = 0;

 private:
  std::shared_ptr<Progress> progress_;
};

}  // namespace detail

}  // namespace stoke

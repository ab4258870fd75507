#pragma once
/// @file
/// `detail::PrefetchPipeline`: the thread of one prefetching range. It pulls host batches,
/// starts their uploads, and queues them with their fences, a bounded number ahead of the
/// consumer, which takes them in order once their fences have signalled.

#include <concepts>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <ranges>
#include <string>
#include <thread>
#include <utility>

#include <stoke/core/error.hpp>
#include <stoke/core/fork.hpp>
#include <stoke/core/staging.hpp>
#include <stoke/data/batch.hpp>
#include <stoke/data/batch_range.hpp>
#include <stoke/data/state.hpp>

namespace stoke {

namespace detail {

/// The value and fence types of a `Staged`.
template <class S>
struct staged_parts;
template <class V, class F>
struct staged_parts<Staged<V, F>> {
  using value = V;
  using fence = F;
};

/// A loader that reports where it stands, as stoke's loaders and their parts do.
///
/// Requirements:
/// 1. `l.state()`, on a `const` loader, returns a `LoaderState`.
template <class L>
concept StatefulLoader = requires(const L& loader) {
  { loader.state() } -> std::same_as<LoaderState>;
};

/// Where the loader a pipeline drains stands right after it yielded a batch (its `state()`),
/// or nothing where that loader has no state (a slice, or a loader without `state()`).
using StateSnapshot = std::function<std::optional<LoaderState>()>;

/// The thread of one prefetching range: it pulls host batches, starts their uploads, and
/// queues them with their fences, at most `depth` ahead of the consumer. With a snapshot, it
/// also keeps the inner loader's state as it was when each batch was pulled, so that the
/// consumer's state counts the batches it took, not the ones pulled ahead.
template <class Value, Fence F>
class PrefetchPipeline {
 public:
  using value_type = Batch<Value>;  ///< what `take()` yields

  /// A pipeline keeping `depth` uploads in flight for `device` (named in errors); `snapshot`
  /// (may be empty) reads the inner loader's state.
  PrefetchPipeline(std::size_t depth, std::string device, StateSnapshot snapshot = {})
      : depth_(depth), device_(std::move(device)), snapshot_(std::move(snapshot)) {}
  PrefetchPipeline(const PrefetchPipeline&) = delete;
  PrefetchPipeline& operator=(const PrefetchPipeline&) = delete;
  ~PrefetchPipeline() { stop(); }

  /// Starts the thread that drains `range`, uploading every batch with `stage(stager, data)`.
  template <class Range, class Stage, class Stager>
  void start(Range range, Stage stage, std::shared_ptr<Stager> stager) {
    consumer_state_ = snapshot();  // the epoch has begun, nothing is taken yet
    thread_ = std::thread([this, range = std::move(range), stage = std::move(stage),
                           stager]() mutable { run(range, stage, *stager); });
  }

  /// The next batch in order, once its fence has signalled; `std::nullopt` after the last.
  /// Rethrows the failure of a host batch or an upload at its position, as a `DataError`.
  std::optional<Batch<Value>> take() {
    if (owner_.inherited()) throw StateError(owner_.after_fork_message("this prefetch pipeline"));
    std::unique_lock lock(mutex_);
    changed_.wait(lock, [&] { return !queue_.empty() || done_; });
    if (queue_.empty()) {
      if (error_) std::rethrow_exception(std::exchange(error_, nullptr));
      consumer_state_ = end_state_;
      return std::nullopt;
    }
    Entry entry = std::move(queue_.front());
    queue_.pop_front();
    consumer_state_ = std::move(entry.state);
    lock.unlock();
    changed_.notify_all();
    try {
      entry.fence.wait();
    } catch (...) {
      throw DataError(context(entry.batch, "fence", "caller"), current_exception_message());
    }
    return std::move(entry.batch);
  }

  /// The inner loader's state as of the last batch the consumer took (or the start of the
  /// epoch, or its end once the consumer saw it); nothing without a snapshot.
  [[nodiscard]] std::optional<LoaderState> consumer_state() const {
    std::lock_guard lock(mutex_);
    return consumer_state_;
  }

  /// Stops the thread (it finishes the batch it is pulling or uploading), joins it, and drops
  /// the batches it queued. In a child forked meanwhile it leaves everything as it is.
  void stop() {
    if (owner_.inherited()) {
      detail::abandon(std::move(thread_));
      return;
    }
    {
      std::lock_guard lock(mutex_);
      stop_ = true;
    }
    changed_.notify_all();
    if (thread_.joinable()) thread_.join();
    std::lock_guard lock(mutex_);
    queue_.clear();
  }

 private:
  struct Entry {
    Batch<Value> batch;
    F fence;
    std::optional<LoaderState> state;  ///< the inner loader's, right after it yielded `batch`
  };

  /// The inner loader's state now, or nothing (no snapshot, or a loader without one).
  [[nodiscard]] std::optional<LoaderState> snapshot() const {
    if (!snapshot_) return std::nullopt;
    return snapshot_();
  }

  template <class Range, class Stage, class Stager>
  void run(Range& range, const Stage& stage, Stager& stager) {
    bool failed = false;
    try {
      if (!wait_for_room()) return;
      auto it = std::ranges::begin(range);
      const auto end = std::ranges::end(range);
      while (it != end) {
        auto&& host = *it;
        std::optional<LoaderState> state = snapshot();
        Entry entry = upload(host, stage, stager);
        entry.state = std::move(state);
        {
          std::lock_guard lock(mutex_);
          queue_.push_back(std::move(entry));
        }
        changed_.notify_all();
        if (!wait_for_room()) return;
        ++it;
      }
    } catch (...) {
      failed = true;
      std::lock_guard lock(mutex_);
      error_ = std::current_exception();
    }
    std::optional<LoaderState> end_state = failed ? std::nullopt : snapshot();
    {
      std::lock_guard lock(mutex_);
      end_state_ = std::move(end_state);
      done_ = true;
    }
    changed_.notify_all();
  }

  template <class Host, class Stage, class Stager>
  Entry upload(Host& host, const Stage& stage, Stager& stager) {
    try {
      auto staged = std::invoke(stage, stager, std::move(host.data));
      return Entry{Batch<Value>{std::move(staged.value), host.epoch, host.step, host.padding,
                                std::move(host.indices)},
                   std::move(staged.fence)};
    } catch (...) {
      throw DataError(context(host, "upload", "prefetch thread"), current_exception_message());
    }
  }

  /// Waits until fewer than `depth` uploads are queued; false once stopped.
  bool wait_for_room() {
    std::unique_lock lock(mutex_);
    changed_.wait(lock, [&] { return stop_ || queue_.size() < depth_; });
    return !stop_;
  }

  template <class B>
  DataErrorContext context(const B& batch, const char* activity, const char* worker) const {
    return DataErrorContext{.epoch = batch.epoch,
                            .step = batch.step,
                            .index = batch.indices.empty() ? 0 : batch.indices.front(),
                            .worker = worker,
                            .device = device_,
                            .activity = activity};
  }

  std::size_t depth_;
  std::string device_;
  StateSnapshot snapshot_;
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<Entry> queue_;
  std::exception_ptr error_;
  bool done_ = false;
  bool stop_ = false;
  std::optional<LoaderState> consumer_state_;  ///< see `consumer_state()`
  std::optional<LoaderState> end_state_;       ///< the inner loader's, after its last batch
  detail::OwnerProcess owner_;
  std::thread thread_;
};

/// Takes a prefetching range's batches from its pipeline; stops the pipeline when dropped.
template <class Pipeline>
class PipelineFeed final : public BatchFeed<typename Pipeline::value_type> {
 public:
  /// The feed of `pipeline`'s batches.
  explicit PipelineFeed(std::shared_ptr<Pipeline> pipeline) : pipeline_(std::move(pipeline)) {}
  std::optional<typename Pipeline::value_type> next() override { return pipeline_->take(); }
  void cancel() noexcept override { pipeline_->stop(); }

 private:
  std::shared_ptr<Pipeline> pipeline_;
};

}  // namespace detail

}  // namespace stoke

#pragma once
/// @file
/// `prefetch_to_device`: while the consumer works on one batch, the next ones are already
/// copying to its device, each with a fence the consumer waits on when it takes the batch.

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
#include <span>
#include <string>
#include <thread>
#include <type_traits>
#include <utility>

#include <stoke/core/device.hpp>
#include <stoke/core/error.hpp>
#include <stoke/core/staging.hpp>
#include <stoke/data/batch.hpp>
#include <stoke/data/batch_loader.hpp>
#include <stoke/data/batch_range.hpp>
#include <stoke/data/dataloader.hpp>
#include <stoke/data/epoch_plan.hpp>
#include <stoke/data/multithread_loader.hpp>
#include <stoke/data/state.hpp>

namespace stoke {

/// Whether the devices of backend `B` work on host memory, so that a host batch already is
/// where it must be and `prefetch_to_device` passes it through untouched: a backend says so
/// with `static constexpr bool host_memory = true;` (as `cpu::Backend` does).
template <class B>
inline constexpr bool is_host_memory_backend = requires { requires B::host_memory; };

/// The backend a loader makes batches for: `L::backend_type` where it names one, else
/// deduced for stoke's own loaders.
template <class L>
struct loader_backend {};
template <class L>
  requires requires { typename L::backend_type; }
struct loader_backend<L> {
  using type = typename L::backend_type;  ///< the loader's backend
};
template <Dataset S, class T, Backend B>
struct loader_backend<BatchLoader<S, T, B>> {
  using type = B;  ///< the loader's backend
};
template <Dataset S, class T, Backend B>
struct loader_backend<MultiThreadLoader<S, T, B>> {
  using type = B;  ///< the loader's backend
};
/// The backend a loader makes batches for.
template <class L>
using loader_backend_t = typename loader_backend<L>::type;

namespace detail {
/// A range that can be uploaded as its bytes.
///
/// Requirements:
/// 1. `const R&` is a contiguous and sized range;
/// 2. its values are trivially copyable.
template <class R>
concept TrivialContiguousRange =
    std::ranges::contiguous_range<const R&> && std::ranges::sized_range<const R&> &&
    std::is_trivially_copyable_v<std::ranges::range_value_t<const R&>>;

template <class R>
std::span<const std::byte> bytes_of_range(const R& range) {
  return std::as_bytes(std::span(std::ranges::data(range), std::ranges::size(range)));
}
}  // namespace detail

/// Host bytes: host data the default upload understands.
///
/// Requirements, one of:
/// 1. `T` is a contiguous, sized range of trivially copyable values (`std::vector<float>`);
/// 2. `t.values()` is such a range, viewing values `t` owns (`cpu::Tensor`).
template <class T>
concept HostBytes = detail::TrivialContiguousRange<T> || requires(const T& data) {
  { data.values() } -> detail::TrivialContiguousRange;
};

/// The bytes of host data, as the default upload sends them (a view, not a copy).
template <HostBytes T>
[[nodiscard]] std::span<const std::byte> host_bytes(const T& data) {
  if constexpr (detail::TrivialContiguousRange<T>) {
    return detail::bytes_of_range(data);
  } else {
    return detail::bytes_of_range(data.values());
  }
}

/// The default way `prefetch_to_device` uploads a host batch: its `host_bytes` into one
/// device buffer. A custom stage is any callable `stage(stager, data)` returning a `Staged`.
struct UploadHostBytes {
  /// Starts the upload of `data` with `stager`.
  template <class Stager, HostBytes T>
  auto operator()(Stager& stager, const T& data) const {
    return stager.upload(host_bytes(data));
  }
};

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
  /// the batches it queued.
  void stop() {
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
  DataErrorContext context(const B& batch, const char* stage, const char* worker) const {
    return DataErrorContext{
        batch.epoch, batch.step, batch.indices.empty() ? 0 : batch.indices.front(),
        stage,       worker,     device_};
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

/// A loader whose batches are copied to its device ahead of the consumer.
///
/// `iter()` starts a thread that pulls the host batches of `L`, starts their uploads with
/// `Stage` through a `B::Stager` of `depth` staging buffers, and queues them: while the
/// consumer works on batch k, batches k+1 .. k+depth are being made and copied. Taking a
/// batch waits only on that batch's fence. Memory in flight is bounded: at most `depth`
/// queued device batches (plus the one the consumer holds) and `depth` staging buffers.
/// Batches keep the host batch's epoch, step, padding and indices; their `data` is the value
/// the stage made (by default the `B::Buffer` holding the host batch's bytes). A failed
/// upload or fence is rethrown to the consumer as a `DataError` at the batch's position.
template <StagingBackend B, DataLoader L, class Stage = UploadHostBytes>
  requires std::same_as<typename L::device_type, device_t<B>>
class PrefetchLoader {
  using host_data_type = decltype(std::declval<typename L::batch_type&>().data);
  using staged_type =
      std::remove_cvref_t<std::invoke_result_t<const Stage&, stager_t<B>&, host_data_type&&>>;
  using value_type = typename detail::staged_parts<staged_type>::value;
  using fence_type = typename detail::staged_parts<staged_type>::fence;
  using Pipeline = detail::PrefetchPipeline<value_type, fence_type>;

 public:
  using backend_type = B;                          ///< where batches are uploaded
  using device_type = device_t<B>;                 ///< the device batches land on
  using host_batch_type = typename L::batch_type;  ///< what the inner loader yields
  using batch_type = Batch<value_type>;            ///< what `iter()` yields

  /// Wraps `loader`, keeping `depth` (at least 1) uploads in flight with `stage`.
  PrefetchLoader(L loader, std::size_t depth, Stage stage = {})
      : inner_(std::make_shared<L>(std::move(loader))), depth_(depth), stage_(std::move(stage)) {
    if (depth_ == 0) throw UsageError("stoke: prefetch depth must be at least 1");
    if constexpr (requires { inner_->device(); }) device_ = inner_->device();
  }
  /// A copy wraps a copy of the inner loader; it makes its own stager when first iterated.
  PrefetchLoader(const PrefetchLoader& other)
      : inner_(std::make_shared<L>(*other.inner_)),
        depth_(other.depth_),
        stage_(other.stage_),
        device_(other.device_) {}
  PrefetchLoader& operator=(const PrefetchLoader& other) {
    if (this != &other) *this = PrefetchLoader(other);
    return *this;
  }
  PrefetchLoader(PrefetchLoader&&) noexcept = default;
  PrefetchLoader& operator=(PrefetchLoader&&) noexcept = default;
  ~PrefetchLoader() = default;

  /// The next epoch's batches, on `device()`, in order; advances the inner loader's epoch.
  [[nodiscard]] BatchRange<batch_type> iter() {
    if (!stager_) stager_ = B::make_stager(device_, depth_);
    auto pipeline = std::make_shared<Pipeline>(depth_, device_name(device_), snapshot());
    auto range = inner_->iter();
    pipeline->start(std::move(range), stage_, stager_);
    current_ = pipeline;
    return BatchRange<batch_type>(std::make_unique<detail::PipelineFeed<Pipeline>>(pipeline));
  }

  /// The inner loader's layout of `epoch` (for `TrainingLoader`).
  [[nodiscard]] EpochLayout layout(std::size_t epoch) const
    requires requires(const L& inner) {
      { inner.layout(epoch) } -> std::same_as<EpochLayout>;
    }
  {
    return inner_->layout(epoch);
  }
  /// Makes the next `iter()` load `epoch` from its start.
  void set_epoch(std::size_t epoch)
    requires requires(L& inner) { inner.set_epoch(epoch); }
  {
    inner_->set_epoch(epoch);
    current_.reset();
  }
  /// Where the consumer stands: the inner loader's state as of the batch the consumer took
  /// last, not counting the batches pulled ahead for upload (see `TrainingLoader`).
  [[nodiscard]] LoaderState state() const
    requires detail::StatefulLoader<L>
  {
    if (current_) {
      if (auto taken = current_->consumer_state()) return *taken;
    }
    return inner_->state();
  }
  /// Makes the next `iter()` load the rest of `state.epoch`.
  void restore(const LoaderState& state)
    requires requires(L& inner) { inner.restore(state); }
  {
    inner_->restore(state);
    current_.reset();
  }

  /// Items the next epoch yields.
  [[nodiscard]] std::size_t num_items() const { return inner_->num_items(); }
  /// Makes later batches for (and uploads them to) `device`.
  void set_device(const device_type& device) {
    inner_->set_device(device);
    if (!(device == device_)) stager_.reset();
    device_ = device;
  }
  /// The device batches are uploaded to.
  [[nodiscard]] const device_type& device() const noexcept { return device_; }
  /// Prefetching over positions `[begin, end)` of the inner loader's epochs.
  [[nodiscard]] PrefetchLoader slice(std::size_t begin, std::size_t end) const {
    return PrefetchLoader(inner_->slice(begin, end), depth_, stage_);
  }
  /// Prefetching over part `index` of `count` of the inner loader (see `split`).
  [[nodiscard]] PrefetchLoader part(std::size_t count, std::size_t index) const
    requires SplitSource<L>
  {
    return PrefetchLoader(inner_->part(count, index), depth_, stage_);
  }

  /// Uploads kept in flight.
  [[nodiscard]] std::size_t depth() const noexcept { return depth_; }
  /// The loader whose batches are uploaded.
  [[nodiscard]] const L& inner() const noexcept { return *inner_; }

  /// The batcher of the loader it wraps (for a loader that shows its batcher).
  [[nodiscard]] decltype(auto) batcher() const
    requires requires(const L& loader) { loader.batcher(); }
  {
    return inner_->batcher();
  }
  /// The stager of this loader's device, or null before the first `iter()`.
  [[nodiscard]] const stager_t<B>* stager() const noexcept { return stager_.get(); }

 private:
  /// Reads the inner loader's state from the pipeline's thread, where it has one (a slice
  /// has none: `state()` then reports the inner loader's own refusal).
  [[nodiscard]] detail::StateSnapshot snapshot() const {
    if constexpr (detail::StatefulLoader<L>) {
      return [inner = inner_]() -> std::optional<LoaderState> {
        try {
          return inner->state();
        } catch (const UsageError&) {
          return std::nullopt;
        }
      };
    } else {
      return {};
    }
  }

  /// On the heap, so the pipeline's thread reads its state while this loader moves.
  std::shared_ptr<L> inner_;
  std::size_t depth_;
  Stage stage_;
  device_type device_{};
  std::shared_ptr<stager_t<B>> stager_;
  std::shared_ptr<Pipeline> current_;  ///< the pipeline of the last `iter()`
};

/// Keeps `depth` batches of `loader` copying to its device ahead of the consumer (see
/// `PrefetchLoader`). `loader` makes host batches for a device of backend `B`. For a host
/// memory backend (`cpu::Backend`) the batches already are on the device: `loader` itself is
/// returned and its batches pass through untouched.
template <class B, DataLoader L>
  requires is_host_memory_backend<B> || StagingBackend<B>
[[nodiscard]] auto prefetch_to_device(L loader, std::size_t depth) {
  if (depth == 0) throw UsageError("stoke: prefetch depth must be at least 1");
  if constexpr (is_host_memory_backend<B>) {
    return loader;
  } else {
    return PrefetchLoader<B, L>(std::move(loader), depth);
  }
}

/// Keeps `depth` batches of `loader` uploading ahead of the consumer, each started with
/// `stage(stager, data)`, which returns a `Staged` value and fence.
template <StagingBackend B, DataLoader L, class Stage>
[[nodiscard]] PrefetchLoader<B, L, Stage> prefetch_to_device(L loader, std::size_t depth,
                                                             Stage stage) {
  return PrefetchLoader<B, L, Stage>(std::move(loader), depth, std::move(stage));
}

/// `prefetch_to_device` for the backend the loader was built for (`loader_backend_t<L>`).
template <DataLoader L>
  requires requires { typename loader_backend_t<L>; }
[[nodiscard]] auto prefetch_to_device(L loader, std::size_t depth) {
  return prefetch_to_device<loader_backend_t<L>>(std::move(loader), depth);
}

}  // namespace stoke

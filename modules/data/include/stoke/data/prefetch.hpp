#pragma once
/// @file
/// `prefetch_to_device`: while the consumer works on one batch, the next ones are already
/// copying to its device, each with a fence the consumer waits on when it takes the batch.

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <type_traits>
#include <utility>
#include <vector>

#include <stoke/core/device.hpp>
#include <stoke/core/error.hpp>
#include <stoke/core/host_bytes.hpp>
#include <stoke/core/host_memory.hpp>
#include <stoke/core/staging.hpp>
#include <stoke/data/batch.hpp>
#include <stoke/data/batch_range.hpp>
#include <stoke/data/dataloader.hpp>
#include <stoke/data/device_image_batch.hpp>
#include <stoke/data/device_sequence_batch.hpp>
#include <stoke/data/epoch_plan.hpp>
#include <stoke/data/prefetch_pipeline.hpp>
#include <stoke/data/state.hpp>

namespace stoke {

/// Whether the devices of backend `B` work on host memory, so that a host batch already is
/// where it must be and `prefetch_to_device` passes it through untouched: a backend says so
/// with `static constexpr bool host_memory = true;` (as `cpu::Backend` does).
template <class B>
inline constexpr bool is_host_memory_backend = requires { requires B::host_memory; };

/// The stage of plain host batches (`HostBytes`: float or integer tensors and vectors): their
/// bytes into one device buffer, the `B::Buffer` the consumer gets.
struct UploadHostBytes {
  /// Starts the upload of `data` with `stager`.
  template <class Stager, HostBytes T>
  auto operator()(Stager& stager, const T& data) const {
    return stager.upload(host_bytes(data));
  }
};

/// A host batch of labelled rows, as `cpu::ImageBatcher` and `images::ImageBatcher` make
/// (`cpu::ClassificationBatch`).
///
/// Requirements:
/// 1. `b.inputs` is `HostBytes`: `b.inputs.rows()` rows of `b.inputs.row_size()` floats;
/// 2. `b.labels` is a `std::vector<std::int32_t>`, the class of every row.
template <class T>
concept HostClassificationBatch = requires(const T& batch) {
  requires HostBytes<std::remove_cvref_t<decltype(batch.inputs)>>;
  { batch.inputs.rows() } -> std::convertible_to<std::size_t>;
  { batch.inputs.row_size() } -> std::convertible_to<std::size_t>;
  requires std::same_as<std::remove_cvref_t<decltype(batch.labels)>, std::vector<std::int32_t>>;
};

/// The stage of labelled host batches (`HostClassificationBatch`): the labels, then the
/// inputs, uploaded into a `DeviceImageBatch` of the backend's buffers, the form device models
/// take (`SoftmaxClassifier`). Its `ready` fence is the inputs' copy, which is ordered after
/// the labels' copy: by an `after` fence where the stager's `upload` takes one (Vulkan), by
/// the copy stream's order otherwise (CUDA; a user's stager whose copies complete in the order
/// they were queued).
struct UploadClassification {
  /// Starts the uploads of `host`'s labels and inputs with `stager`.
  template <class Stager, HostClassificationBatch T>
  auto operator()(Stager& stager, T&& host) const {
    auto labels = stager.upload(std::as_bytes(std::span(host.labels)));
    using Fence = decltype(labels.fence);
    auto inputs = [&] {
      const std::span<const std::byte> bytes = host_bytes(host.inputs);
      if constexpr (requires { stager.upload(bytes, std::span<const Fence>()); }) {
        return stager.upload(bytes, std::span<const Fence>(&labels.fence, 1));
      } else {
        return stager.upload(bytes);
      }
    }();
    using Batch = DeviceImageBatch<decltype(inputs.value), Fence>;
    const std::size_t rows = host.inputs.rows();
    const std::size_t row_size = host.inputs.row_size();
    Fence ready = inputs.fence;
    return Staged<Batch, Fence>{Batch{std::move(inputs.value), std::move(host.labels), rows,
                                      row_size, ready, std::move(labels.value)},
                                std::move(inputs.fence)};
  }
};

/// The stage `prefetch_to_device` takes unless given one: the one the library ships for the
/// kind of the host batch, `UploadClassification` for labelled batches,
/// `UploadSequenceBatch` for batches of token sequences (`PackedBatch`) and `UploadHostBytes`
/// for plain ones. A batch of another kind needs a stage of its own: any callable
/// `stage(stager, data)` returning a `Staged` value and fence (see `PrefetchLoader`).
struct DefaultStage {
  /// Starts the upload of `data` with the stage of its kind.
  template <class Stager, class T>
    requires HostClassificationBatch<std::remove_cvref_t<T>> ||
             HostSequenceBatch<std::remove_cvref_t<T>> || HostBytes<std::remove_cvref_t<T>>
  auto operator()(Stager& stager, T&& data) const {
    if constexpr (HostClassificationBatch<std::remove_cvref_t<T>>) {
      return UploadClassification{}(stager, std::forward<T>(data));
    } else if constexpr (HostSequenceBatch<std::remove_cvref_t<T>>) {
      return UploadSequenceBatch{}(stager, data);
    } else {
      return UploadHostBytes{}(stager, data);
    }
  }
};

/// A stager that lends host memory which its uploads read with no host copy.
///
/// Requirements:
/// 1. `s.lent_memory()` returns a `std::shared_ptr<HostMemory>`;
/// 2. an upload of bytes that lie in one block allocated from it copies them to the device
///    by DMA alone, and the block is not `idle` until that copy completed.
template <class S>
concept LendingStager = requires(const S& stager) {
  { stager.lent_memory() } -> std::convertible_to<std::shared_ptr<HostMemory>>;
};

/// A loader whose batcher makes its batch storage from a buffer pool that can be lent memory
/// (as `cpu::StackBatcher`, `cpu::ImageBatcher` and `images::ImageBatcher` do).
///
/// Requirements:
/// 1. `l.batcher().pool.lend(memory)` makes later storage of the batcher and of its copies
///    (on the loader's worker threads) come from `memory`.
template <class L>
concept PooledStorageLoader = requires(const L& loader, std::shared_ptr<HostMemory> memory) {
  loader.batcher().pool.lend(memory);
};

/// A loader whose batches are copied to its device ahead of the consumer.
///
/// No copy on the host: where the stager lends staging memory (`LendingStager`: pinned on
/// CUDA, host-visible on Vulkan) and the loader's batcher draws its storage from a pool
/// (`PooledStorageLoader`), the first `iter()` lends that memory to the pool before any batch
/// is made, so batchers write rows straight into the bytes the DMA reads and the upload is
/// the DMA alone. A block is handed out again only after its copy's fence. The pool is
/// shared by the batcher's copies, so after a `split` it is lent to one device (the last to
/// start); the others' batches are copied into staging on the upload thread.
///
/// `iter()` starts a thread that pulls the host batches of `L`, starts their uploads with
/// `Stage` through a `B::Stager` of `depth` staging buffers, and queues them: while the
/// consumer works on batch k, batches k+1 .. k+depth are being made and copied. Taking a
/// batch waits only on that batch's fence. Memory in flight is bounded: at most `depth`
/// queued device batches (plus the one the consumer holds) and `depth` staging buffers.
/// Batches keep the host batch's epoch, step, padding and indices; their `data` is the value
/// the stage made (by default the `B::Buffer` holding the host batch's bytes). A failed
/// upload or fence is rethrown to the consumer as a `DataError` at the batch's position.
template <StagingBackend B, DataLoader L, class Stage = DefaultStage>
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
    make_stager();
    auto pipeline = std::make_shared<Pipeline>(depth_, device_name(device_), snapshot());
    auto range = inner_->iter();
    pipeline->start(std::move(range), stage_, stager_);
    current_ = pipeline;
    return BatchRange<batch_type>(std::make_unique<detail::PipelineFeed<Pipeline>>(pipeline));
  }

  /// Makes the stager now and fills the batcher's pool with buffers of `batch_bytes` in the
  /// stager's lent memory (and, where the stager keeps staging buffers of its own for bytes
  /// from elsewhere, those too), so that no batch of at most that size allocates staging
  /// memory during training: a pinned allocation synchronises a CUDA device.
  void reserve(std::size_t batch_bytes)
    requires PooledStorageLoader<L>
  {
    make_stager();
    inner_->batcher().pool.reserve(batch_bytes);
    if constexpr (requires { stager_->reserve(batch_bytes); }) stager_->reserve(batch_bytes);
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
  /// Prefetching over share `index` of `count` of the inner loader (see `split`).
  [[nodiscard]] PrefetchLoader share(std::size_t count, std::size_t index) const
    requires SplitSource<L>
  {
    return PrefetchLoader(inner_->share(count, index), depth_, stage_);
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
  /// Makes the stager of `device_` unless there is one, and lends its memory to the batcher's
  /// pool (see the class comment).
  void make_stager() {
    if (stager_) return;
    stager_ = B::make_stager(device_, depth_);
    if constexpr (LendingStager<stager_t<B>> && PooledStorageLoader<L>) {
      inner_->batcher().pool.lend(stager_->lent_memory());
    }
  }

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

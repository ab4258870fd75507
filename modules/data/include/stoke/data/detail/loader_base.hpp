#pragma once
/// @file
/// What every stoke loader shares: the dataset and batcher, the device, the plan of which
/// positions each epoch reads, the epoch counter, and how one batch is made.

#include <algorithm>
#include <cstddef>
#include <exception>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include <stoke/core/backend.hpp>
#include <stoke/core/error.hpp>
#include <stoke/data/batch.hpp>
#include <stoke/data/batcher.hpp>
#include <stoke/data/dataset.hpp>
#include <stoke/data/detail/batch_range.hpp>
#include <stoke/data/options.hpp>
#include <stoke/data/order.hpp>
#include <stoke/data/plan.hpp>

namespace stoke::detail {

/// The dataset and batcher, shared (immutable) by a loader, its copies, slices and workers.
template <class S, class T>
struct LoaderSource {
  S dataset;
  T batcher;
};

/// Base of `BatchLoader` and `MultiThreadLoader` (CRTP: `slice` and `part` return `Derived`).
template <class Derived, Dataset S, class T, Backend B>
  requires Batcher<T, B, dataset_item_t<S>>
class LoaderBase {
 public:
  using device_type = device_t<B>;                            ///< where batches go
  using item_type = dataset_item_t<S>;                        ///< one sample
  using batch_type = Batch<batch_output_t<T, B, item_type>>;  ///< what `iter()` yields

  /// A loader over `dataset`, batching with `batcher` for `device`.
  LoaderBase(S dataset, T batcher, const LoaderOptions& options, device_type device = {})
      : source_(std::make_shared<const LoaderSource<S, T>>(
            LoaderSource<S, T>{std::move(dataset), std::move(batcher)})),
        device_(std::move(device)),
        options_(options),
        plan_(static_cast<std::size_t>(source_->dataset.size()), options.batch_size,
              options.remainder) {}

  /// Items the next epoch yields, padding included.
  [[nodiscard]] std::size_t num_items() const { return plan_.layout(next_epoch_).length; }
  /// Batches the next epoch yields.
  [[nodiscard]] std::size_t num_batches() const { return plan_.layout(next_epoch_).num_batches; }
  /// The shape of `epoch` for this loader: batches, padding, dropped samples.
  [[nodiscard]] EpochLayout layout(std::size_t epoch) const { return plan_.layout(epoch); }

  /// The device batches are made for.
  [[nodiscard]] const device_type& device() const noexcept { return device_; }
  /// Makes later batches for `device`.
  void set_device(const device_type& device) { device_ = device; }

  /// The epoch the next `iter()` loads; each `iter()` advances it by one.
  [[nodiscard]] std::size_t epoch() const noexcept { return next_epoch_; }
  /// Makes the next `iter()` load `epoch`.
  void set_epoch(std::size_t epoch) noexcept { next_epoch_ = epoch; }

  /// The loader's settings.
  [[nodiscard]] const LoaderOptions& options() const noexcept { return options_; }
  /// Which positions each epoch reads.
  [[nodiscard]] const Plan& plan() const noexcept { return plan_; }
  /// The dataset.
  [[nodiscard]] const S& dataset() const noexcept { return source_->dataset; }

  /// A loader over positions `[begin, end)` of this loader's epoch sequence (clamped to it).
  /// Slices of one loader share its epoch order, so disjoint slices read disjoint samples.
  [[nodiscard]] Derived slice(std::size_t begin, std::size_t end) const {
    Derived copy(self());
    copy.plan_.add_slice(begin, end);
    return copy;
  }

  /// Part `index` of `count`: every `count`-th batch of this loader, starting with batch
  /// `index`. The parts have equal batch counts (remainder dropped or padded), are disjoint,
  /// and together cover the epoch; see `split`.
  [[nodiscard]] Derived part(std::size_t count, std::size_t index) const {
    Derived copy(self());
    copy.plan_.add_part(count, index);
    return copy;
  }

  /// The order of `epoch`: a keyed bijection from positions to dataset indices.
  [[nodiscard]] EpochOrder order(std::size_t epoch) const {
    const std::size_t size = plan_.dataset_size();
    return options_.shuffle ? EpochOrder(size, options_.seed, epoch) : EpochOrder(size);
  }

  /// Makes batch `step` of the epoch laid out by `layout`, in the calling thread.
  /// Failures are rethrown as `DataError` naming the index, `worker` and device.
  [[nodiscard]] batch_type make_batch(const EpochLayout& layout, std::size_t step,
                                      const std::string& worker) const {
    const std::size_t b = plan_.batch_size();
    const std::size_t first = step * b;
    const std::size_t count = std::min(b, layout.length - first);
    const EpochOrder order = this->order(layout.epoch);
    std::vector<std::size_t> indices(count);
    for (std::size_t i = 0; i < count; ++i) indices[i] = order(plan_.locate(layout, first + i));
    const std::size_t padding = first + count - std::clamp(layout.pad_from, first, first + count);

    std::vector<item_type> items;
    items.reserve(count);
    const S& dataset = source_->dataset;
    if constexpr (requires { dataset.get_many(std::span<const std::size_t>(indices), items); }) {
      try {
        dataset.get_many(std::span<const std::size_t>(indices), items);
      } catch (...) {
        fail(layout, step, count == 0 ? 0 : indices.front(), "get_many", worker);
      }
    } else {
      for (const std::size_t index : indices) {
        try {
          items.push_back(dataset.get(index));
        } catch (...) {
          fail(layout, step, index, "get", worker);
        }
      }
    }
    try {
      return batch_type{source_->batcher.batch(std::move(items), device_), layout.epoch, step,
                        padding, std::move(indices)};
    } catch (...) {
      fail(layout, step, count == 0 ? 0 : indices.front(), "batch", worker);
    }
  }

 protected:
  /// Lays out the next epoch and advances the epoch counter.
  EpochLayout begin_epoch() { return plan_.layout(next_epoch_++); }

  /// The batches of `layout`, each made in the consumer's thread as the range advances.
  [[nodiscard]] BatchRange<batch_type> iter_in_caller(EpochLayout layout) const {
    auto epoch = std::make_shared<const EpochLayout>(std::move(layout));
    auto step = std::make_shared<std::size_t>(0);
    return BatchRange<batch_type>([loader = *this, epoch, step]() -> std::optional<batch_type> {
      if (*step >= epoch->num_batches) return std::nullopt;
      return loader.make_batch(*epoch, (*step)++, "caller");
    });
  }

 private:
  [[noreturn]] void fail(const EpochLayout& layout, std::size_t step, std::size_t index,
                         const char* stage, const std::string& worker) const {
    std::string cause = "unknown exception";
    try {
      throw;
    } catch (const std::exception& error) {
      cause = error.what();
    } catch (...) {
    }
    throw DataError(
        DataErrorContext{layout.epoch, step, index, stage, worker, device_name(device_)}, cause);
  }

  const Derived& self() const { return static_cast<const Derived&>(*this); }

  std::shared_ptr<const LoaderSource<S, T>> source_;
  device_type device_;
  LoaderOptions options_;
  Plan plan_;
  std::size_t next_epoch_ = 0;
};

}  // namespace stoke::detail

#pragma once
/// @file
/// `WindowsDataset` and `stoke::windows(size, stride)`: runs of consecutive samples (for
/// sequences and time series).

#include <algorithm>
#include <cstddef>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include <stoke/core/error.hpp>
#include <stoke/data/check_index.hpp>
#include <stoke/data/dataset.hpp>
#include <stoke/data/sharded_order.hpp>
#include <stoke/data/transforms/pipe.hpp>

namespace stoke {

/// Windows of `size` consecutive samples of `S`, one every `stride` samples: item `i` holds
/// samples `[i * stride, i * stride + size)`. There are `(n - size) / stride + 1` windows
/// when `n = inner.size() >= size`, else none; samples past the last window are left out.
/// Over a sharded dataset whose shards lie end to end on one axis (one file per month), the
/// windows that span two shards are kept: they read from both.
template <Dataset S>
class WindowsDataset {
 public:
  /// Windows of `window_size` samples of `inner`, `stride` apart; throws `UsageError`
  /// when `window_size` or `stride` is 0.
  WindowsDataset(S inner, std::size_t window_size, std::size_t stride)
      : inner_(std::move(inner)), window_(window_size), stride_(stride) {
    if (window_size == 0 || stride == 0) {
      throw UsageError("stoke: windows need a size and a stride of at least 1, got size " +
                       std::to_string(window_size) + " and stride " + std::to_string(stride));
    }
    const std::size_t n = inner_.size();
    count_ = n >= window_size ? (n - window_size) / stride + 1 : 0;
  }

  /// Number of windows.
  [[nodiscard]] std::size_t size() const noexcept { return count_; }

  /// Window `index`: samples `[index * stride, index * stride + size)` of the inner dataset:
  /// one item of consecutive rows when the inner dataset reads runs of rows
  /// (`inner.rows(first, count)`, as `ShardedArrays` does), else a vector of copies of the
  /// samples; throws `UsageError` when `index >= size()`.
  [[nodiscard]] auto get(std::size_t index) const {
    stoke::check_index(index, count_, "WindowsDataset");
    if constexpr (requires { inner_.rows(index, window_); }) {
      return inner_.rows(index * stride_, window_);
    } else {
      return samples(index);
    }
  }

  /// Copies of the samples of window `index`, one item each.
  [[nodiscard]] std::vector<dataset_item_t<S>> samples(std::size_t index) const {
    stoke::check_index(index, count_, "WindowsDataset");
    std::vector<dataset_item_t<S>> window;
    window.reserve(window_);
    const std::size_t first = index * stride_;
    for (std::size_t offset = 0; offset < window_; ++offset) {
      window.push_back(inner_.get(first + offset));
    }
    return window;
  }

  /// Where each shard's windows begin, when the inner dataset is sharded: a window belongs to
  /// the shard it starts in (a window that runs over the shard's end reads the next one too),
  /// so a shard-aware order keeps consecutive windows in one shard.
  [[nodiscard]] std::vector<std::size_t> shard_begins() const
    requires ShardedDataset<S>
  {
    std::vector<std::size_t> begins;
    for (const auto inner_begin : inner_.shard_begins()) {
      const auto first = static_cast<std::size_t>(inner_begin);
      begins.push_back(std::min(count_, (first + stride_ - 1) / stride_));
    }
    return begins;
  }

  /// Passes the order of the next epoch's shards on to the inner dataset, which reads them
  /// ahead (the shards of the windows are those of the inner dataset).
  void read_ahead(std::span<const std::size_t> shards) const
    requires ReadAheadShardedDataset<S>
  {
    inner_.read_ahead(shards);
  }

  /// Samples per window.
  [[nodiscard]] std::size_t window_size() const noexcept { return window_; }

  /// Samples between the starts of consecutive windows.
  [[nodiscard]] std::size_t stride() const noexcept { return stride_; }

  /// The inner dataset.
  [[nodiscard]] const S& inner() const noexcept { return inner_; }

 private:
  S inner_;
  std::size_t window_ = 0;
  std::size_t stride_ = 0;
  std::size_t count_ = 0;
};

/// `dataset | windows(size, stride)`: a `WindowsDataset` of `size` samples, `stride` apart.
constexpr auto windows(std::size_t size, std::size_t stride) {
  return DatasetAdaptor([size, stride]<Dataset S>(S dataset) {
    return WindowsDataset<S>(std::move(dataset), size, stride);
  });
}

}  // namespace stoke

#pragma once
/// @file
/// `WindowsDataset` and `stoke::windows(size, stride)`: runs of consecutive samples (for
/// sequences and time series).

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include <stoke/core/error.hpp>
#include <stoke/data/dataset.hpp>
#include <stoke/data/detail/dataset_view.hpp>
#include <stoke/data/transforms/pipe.hpp>

namespace stoke {

/// Windows of `size` consecutive samples of `S`, one every `stride` samples: item `i` holds
/// samples `[i * stride, i * stride + size)`. There are `(n - size) / stride + 1` windows
/// when `n = inner.size() >= size`, else none; samples past the last window are left out.
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

  /// Window `index`: copies of samples `[index * stride, index * stride + size)` of the inner
  /// dataset; throws `UsageError` when `index >= size()`.
  [[nodiscard]] std::vector<dataset_item_t<S>> get(std::size_t index) const {
    detail::check_index(index, count_, "WindowsDataset");
    std::vector<dataset_item_t<S>> window;
    window.reserve(window_);
    const std::size_t first = index * stride_;
    for (std::size_t offset = 0; offset < window_; ++offset) {
      window.push_back(inner_.get(first + offset));
    }
    return window;
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

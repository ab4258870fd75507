#pragma once
/// @file
/// `PartialDataset` and `stoke::partial(begin, end)`: a contiguous sub-range of a dataset.

#include <algorithm>
#include <cstddef>
#include <string>
#include <utility>

#include <stoke/core/error.hpp>
#include <stoke/data/dataset.hpp>
#include <stoke/data/detail/dataset_view.hpp>
#include <stoke/data/transforms/pipe.hpp>

namespace stoke {

/// Samples `[begin, end)` of `S`, renumbered from 0.
template <Dataset S>
class PartialDataset {
 public:
  /// Samples `[begin, end)` of `inner`; `end` is clamped to `inner.size()`. Throws
  /// `UsageError` naming the numbers when `begin` is past the (clamped) end.
  PartialDataset(S inner, std::size_t begin, std::size_t end)
      : inner_(std::move(inner)), begin_(begin) {
    const std::size_t inner_size = inner_.size();
    const std::size_t clamped_end = std::min(end, inner_size);
    if (begin > clamped_end) {
      throw UsageError("stoke: partial begin " + std::to_string(begin) + " is past its end " +
                       std::to_string(clamped_end) + " (end " + std::to_string(end) +
                       ", dataset size " + std::to_string(inner_size) + ")");
    }
    size_ = clamped_end - begin;
  }

  /// Number of samples: `end - begin` after clamping.
  [[nodiscard]] std::size_t size() const noexcept { return size_; }

  /// Sample `begin + index` of the inner dataset; throws `UsageError` when
  /// `index >= size()`.
  [[nodiscard]] detail::get_result_t<S> get(std::size_t index) const {
    return inner_.get(inner_index(index));
  }

  /// The inner dataset's index for `index`; throws `UsageError` when out of range.
  [[nodiscard]] std::size_t inner_index(std::size_t index) const {
    stoke::check_index(index, size_, "PartialDataset");
    return begin_ + index;
  }

  /// The inner dataset.
  [[nodiscard]] const S& inner() const noexcept { return inner_; }

 private:
  S inner_;
  std::size_t begin_ = 0;
  std::size_t size_ = 0;
};

/// `dataset | partial(begin, end)`: a `PartialDataset` over samples `[begin, end)`.
constexpr auto partial(std::size_t begin, std::size_t end) {
  return DatasetAdaptor([begin, end]<Dataset S>(S dataset) {
    return PartialDataset<S>(std::move(dataset), begin, end);
  });
}

}  // namespace stoke

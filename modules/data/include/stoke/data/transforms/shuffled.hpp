#pragma once
/// @file
/// `ShuffledDataset` and `stoke::shuffled(seed)`: a dataset in a fixed random order.

#include <cstddef>
#include <cstdint>
#include <utility>

#include <stoke/data/dataset.hpp>
#include <stoke/data/detail/dataset_view.hpp>
#include <stoke/data/order.hpp>
#include <stoke/data/transforms/pipe.hpp>

namespace stoke {

/// The samples of `S` in a random order fixed by `seed`. The permutation is the keyed
/// bijection `EpochOrder(size, seed, 0)`: O(1) memory and O(1) time per sample, for any size.
template <Dataset S>
class ShuffledDataset {
 public:
  /// `inner` permuted under `seed`.
  ShuffledDataset(S inner, std::uint64_t seed)
      : inner_(std::move(inner)), order_(inner_.size(), seed, 0) {}

  /// Number of samples (that of the inner dataset).
  [[nodiscard]] std::size_t size() const noexcept { return order_.size(); }

  /// Sample `inner_index(index)` of the inner dataset.
  [[nodiscard]] detail::get_result_t<S> get(std::size_t index) const {
    return inner_.get(inner_index(index));
  }

  /// The inner dataset's index at position `index` of the permutation; throws
  /// `UsageError` when `index >= size()`.
  [[nodiscard]] std::size_t inner_index(std::size_t index) const {
    stoke::check_index(index, order_.size(), "ShuffledDataset");
    return order_(index);
  }

  /// The inner dataset.
  [[nodiscard]] const S& inner() const noexcept { return inner_; }

 private:
  S inner_;
  EpochOrder order_;
};

/// `dataset | shuffled(seed)`: a `ShuffledDataset` permuting `dataset` under `seed`.
constexpr auto shuffled(std::uint64_t seed) {
  return DatasetAdaptor(
      [seed]<Dataset S>(S dataset) { return ShuffledDataset<S>(std::move(dataset), seed); });
}

}  // namespace stoke

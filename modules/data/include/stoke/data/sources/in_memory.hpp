#pragma once
/// @file
/// `InMemoryDataset`: samples held in a shared, immutable `std::vector`.

#include <cstddef>
#include <memory>
#include <span>
#include <utility>
#include <vector>

#include <stoke/data/detail/dataset_view.hpp>

namespace stoke {

/// A dataset over a `std::vector<T>` that it owns. The vector is immutable and shared by
/// every copy, so copies are cheap and `get` is safe from several threads.
template <class T>
class InMemoryDataset {
 public:
  /// The samples, in index order.
  explicit InMemoryDataset(std::vector<T> items)
      : items_(std::make_shared<const std::vector<T>>(std::move(items))) {}

  /// Number of samples.
  [[nodiscard]] std::size_t size() const noexcept { return items_->size(); }

  /// Sample `index`, by reference into the shared storage; throws `UsageError`
  /// naming the index and the size when `index >= size()`.
  [[nodiscard]] typename std::vector<T>::const_reference get(std::size_t index) const {
    stoke::check_index(index, size(), "InMemoryDataset");
    return (*items_)[index];
  }

  /// Appends copies of the samples at `indices` to `out`, in order. Checks every index
  /// first: on `UsageError` nothing is appended.
  void get_many(std::span<const std::size_t> indices, std::vector<T>& out) const {
    const std::vector<T>& items = *items_;
    for (const std::size_t index : indices) {
      stoke::check_index(index, items.size(), "InMemoryDataset");
      detail::prefetch(&items[index]);  // shuffled indices miss the cache: start every load now
    }
    out.reserve(out.size() + indices.size());
    for (const std::size_t index : indices) out.push_back(items[index]);
  }

  /// All samples, in index order.
  [[nodiscard]] const std::vector<T>& items() const noexcept { return *items_; }

 private:
  std::shared_ptr<const std::vector<T>> items_;
};

}  // namespace stoke

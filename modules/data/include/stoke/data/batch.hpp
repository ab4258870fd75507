#pragma once
/// @file
/// `Batch<T>`: what a loader yields, the batcher's output plus where its samples came from.

#include <cstddef>
#include <vector>

namespace stoke {

/// One batch as a loader delivers it: the batcher's output and its provenance.
///
/// Padding (see `Remainder::pad`) repeats samples so every device runs the same number of
/// steps; padded samples are always the last `padding` items of the batch, so evaluation can
/// ignore them.
template <class T>
struct Batch {
  T data;                            ///< what the batcher made, on the loader's device
  std::size_t epoch = 0;             ///< the epoch this batch belongs to
  std::size_t step = 0;              ///< its position among this loader's batches of the epoch
  std::size_t padding = 0;           ///< how many trailing items are padding
  std::vector<std::size_t> indices;  ///< the dataset index of every item, padding included

  /// Number of items, padding included.
  [[nodiscard]] std::size_t size() const noexcept { return indices.size(); }
  /// Number of items that are not padding.
  [[nodiscard]] std::size_t real_size() const noexcept { return indices.size() - padding; }
};

}  // namespace stoke

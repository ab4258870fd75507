#pragma once
/// @file
/// The `Dataset` concept: a random-access collection of samples.

#include <concepts>
#include <cstddef>
#include <type_traits>

namespace stoke {

/// A dataset is a random-access collection of samples.
///
/// Requirements:
/// 1. `s.size()` is the number of samples;
/// 2. `s.get(i)` returns sample `i` for every `i < s.size()`, on a `const` dataset, and may be
///    called from several threads at once (loaders call it from their workers);
/// 3. optionally `s.get_many(indices, out)` reads many samples at once (bulk reads); in it,
///    `sample_rng(k)` is the random stream of item `k` of `indices` (a `SampleItemScope(k)`
///    makes it what `sample_rng()` returns, for code shared with `get`).
///
/// Datasets are values: copying one should be cheap (share the storage).
template <class S>
concept Dataset = std::copy_constructible<S> && requires(const S& dataset, std::size_t index) {
  { dataset.size() } -> std::convertible_to<std::size_t>;
  dataset.get(index);
  requires !std::is_void_v<decltype(dataset.get(index))>;
};

/// The sample type of a dataset: what `get` returns, without reference or cv-qualifiers.
template <Dataset S>
using dataset_item_t = std::remove_cvref_t<decltype(std::declval<const S&>().get(std::size_t{}))>;

}  // namespace stoke

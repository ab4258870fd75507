#pragma once
/// @file
/// `MapDataset` and `stoke::map(f)`: a function applied to every sample when it is read.

#include <concepts>
#include <cstddef>
#include <functional>
#include <type_traits>
#include <utility>

#include <stoke/data/dataset.hpp>
#include <stoke/data/detail/dataset_view.hpp>
#include <stoke/data/transforms/pipe.hpp>

namespace stoke {
namespace detail {

/// A map function that takes the sample's index too.
///
/// Requirements:
/// 1. `f(item, index)` is callable on a `const` `F` with a sample of `S` and a `std::size_t`.
template <class F, class S>
concept IndexedMapFunction = std::invocable<const F&, get_result_t<S>, std::size_t>;

/// What `f` returns for a sample of `S` (called with the index where it takes one).
template <class F, class S>
struct map_result {
  using type = std::invoke_result_t<const F&, get_result_t<S>>;
};
template <class F, class S>
  requires IndexedMapFunction<F, S>
struct map_result<F, S> {
  using type = std::invoke_result_t<const F&, get_result_t<S>, std::size_t>;
};

/// A function of the samples of `S`.
///
/// Requirements, one of:
/// 1. `F` is an `IndexedMapFunction` of `S`;
/// 2. `f(item)` is callable on a `const` `F` with a sample of `S`.
template <class F, class S>
concept SampleFunction = IndexedMapFunction<F, S> || std::invocable<const F&, get_result_t<S>>;

}  // namespace detail

/// A map function: one that `map` can apply to the samples of `S`.
///
/// Requirements:
/// 1. `S` models `Dataset` and `F` is copy-constructible;
/// 2. `f(item, index)` or `f(item)` is callable on a `const` function with a sample of `S`
///    (the index form is preferred when both work), from several threads at once;
/// 3. it returns a value, not `void`.
template <class F, class S>
concept MapFunction = Dataset<S> && std::copy_constructible<F> && detail::SampleFunction<F, S> &&
                      !std::is_void_v<typename detail::map_result<F, S>::type>;

/// The samples of `S`, each passed through `F` when read: `get(i)` is `f(inner.get(i), i)`,
/// or `f(inner.get(i))`. `i` is the index in this dataset (and in `S`), so augmentations
/// can key their randomness by it. `f` is called from several threads at once; it must not
/// return a reference into a sample that `S::get` returns by value.
template <Dataset S, class F>
  requires MapFunction<F, S>
class MapDataset {
 public:
  /// `fn` applied to the samples of `inner`.
  MapDataset(S inner, F fn) : inner_(std::move(inner)), fn_(std::move(fn)) {}

  /// Number of samples (that of the inner dataset).
  [[nodiscard]] std::size_t size() const { return inner_.size(); }

  /// `f` applied to sample `index` of the inner dataset.
  [[nodiscard]] typename detail::map_result<F, S>::type get(std::size_t index) const {
    if constexpr (detail::IndexedMapFunction<F, S>) {
      return std::invoke(fn_, inner_.get(index), index);
    } else {
      return std::invoke(fn_, inner_.get(index));
    }
  }

  /// The inner dataset.
  [[nodiscard]] const S& inner() const noexcept { return inner_; }

 private:
  S inner_;
  F fn_;
};

/// `dataset | map(f)`: a `MapDataset` applying `f` to every sample of `dataset`.
template <class F>
constexpr auto map(F fn) {
  return DatasetAdaptor([fn = std::move(fn)]<Dataset S>(S dataset)
                          requires MapFunction<F, S>
                        { return MapDataset<S, F>(std::move(dataset), fn); });
}

}  // namespace stoke

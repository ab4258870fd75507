#pragma once
/// @file
/// The pipe of dataset transforms: `dataset | stoke::map(f) | stoke::partial(10, 20)`.

#include <concepts>
#include <functional>
#include <type_traits>
#include <utility>

#include <stoke/data/dataset.hpp>

namespace stoke {

/// A transform waiting for its dataset. It holds a callable that takes a dataset by value
/// and returns the view over it; `dataset | adaptor` calls it with a copy of `dataset`.
/// Every transform factory (`map`, `partial`, `shuffled`, ...) returns one.
template <class Fn>
class DatasetAdaptor {
 public:
  /// Wraps `fn`, called as `fn(dataset)` with a dataset by value.
  constexpr explicit DatasetAdaptor(Fn fn) : fn_(std::move(fn)) {}

  /// The view of this transform over `dataset`.
  template <Dataset S>
    requires std::invocable<const Fn&, S>
  constexpr auto operator()(S dataset) const {
    return std::invoke(fn_, std::move(dataset));
  }

 private:
  Fn fn_;
};

/// `dataset | adaptor`: the adaptor's view over (a copy of) `dataset`.
template <class S, class Fn>
  requires Dataset<std::remove_cvref_t<S>> && std::invocable<const Fn&, std::remove_cvref_t<S>>
constexpr auto operator|(S&& dataset, const DatasetAdaptor<Fn>& adaptor) {
  return adaptor(std::remove_cvref_t<S>(std::forward<S>(dataset)));
}

/// `first | second`: one adaptor that applies `first`, then `second`.
template <class F, class G>
constexpr auto operator|(DatasetAdaptor<F> first, DatasetAdaptor<G> second) {
  return DatasetAdaptor([first = std::move(first), second = std::move(second)]<Dataset S>(
                            S dataset) -> decltype(second(first(std::move(dataset)))) {
    return second(first(std::move(dataset)));
  });
}

}  // namespace stoke

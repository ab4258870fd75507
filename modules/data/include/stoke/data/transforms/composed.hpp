#pragma once
/// @file
/// Concatenation: `ComposedDataset` / `stoke::compose(a, b, ...)` over datasets of different
/// types, and `ConcatDataset` / `stoke::concat(components)` over many datasets of one type.

#include <algorithm>
#include <array>
#include <concepts>
#include <cstddef>
#include <memory>
#include <span>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include <stoke/data/dataset.hpp>
#include <stoke/data/detail/dataset_view.hpp>

namespace stoke {
namespace detail {

/// The component holding `index`, given `offsets` (`offsets[k]` is the first index of component
/// `k`, the last entry the total size; requires `index < offsets.back()`): binary search, which
/// skips empty components.
[[nodiscard]] inline std::size_t find_component(std::span<const std::size_t> offsets,
                                                std::size_t index) noexcept {
  const auto ends = offsets.subspan(1);
  return static_cast<std::size_t>(std::upper_bound(ends.begin(), ends.end(), index) - ends.begin());
}

}  // namespace detail

/// The samples of each component in turn: indices `[0, first.size())` read the first component, the
/// next ones the second component, and so on. Every component has the same item type; `get` returns
/// their common reference (a reference when every component returns one, else a value).
template <Dataset First, Dataset... Rest>
  requires(std::same_as<dataset_item_t<First>, dataset_item_t<Rest>> && ...) && requires {
    typename std::common_reference_t<detail::get_result_t<First>, detail::get_result_t<Rest>...>;
  }
class ComposedDataset {
 public:
  /// What `get` returns.
  using reference =
      std::common_reference_t<detail::get_result_t<First>, detail::get_result_t<Rest>...>;

  /// The concatenation of `first, rest...`.
  explicit ComposedDataset(First first, Rest... rest)
      : components_(std::move(first), std::move(rest)...) {
    std::apply(
        [this](const auto&... component) {
          std::size_t k = 0;
          ((offsets_[k + 1] = offsets_[k] + component.size(), ++k), ...);
        },
        components_);
  }

  /// Total number of samples.
  [[nodiscard]] std::size_t size() const noexcept { return offsets_.back(); }

  /// Sample `index` of the concatenation; throws `UsageError` when `index >= size()`.
  [[nodiscard]] reference get(std::size_t index) const {
    stoke::check_index(index, size(), "ComposedDataset");
    static constexpr std::array<Getter, kComponents> getters =
        make_getters(std::make_index_sequence<kComponents>{});
    const std::size_t component = detail::find_component(offsets_, index);
    return getters[component](*this, index - offsets_[component]);
  }

  /// The components.
  [[nodiscard]] const std::tuple<First, Rest...>& components() const noexcept {
    return components_;
  }

 private:
  static constexpr std::size_t kComponents = 1 + sizeof...(Rest);
  using Getter = reference (*)(const ComposedDataset&, std::size_t);

  template <std::size_t K>
  static reference get_from(const ComposedDataset& self, std::size_t index) {
    return std::get<K>(self.components_).get(index);
  }

  template <std::size_t... K>
  static constexpr std::array<Getter, kComponents> make_getters(std::index_sequence<K...>) {
    return {&get_from<K>...};
  }

  std::tuple<First, Rest...> components_;
  std::array<std::size_t, kComponents + 1> offsets_{};
};

/// The concatenation of `components...` (copies), as a `ComposedDataset`.
template <class... Components>
  requires(sizeof...(Components) > 0)
[[nodiscard]] auto compose(Components&&... components) {
  return ComposedDataset<std::remove_cvref_t<Components>...>(
      std::forward<Components>(components)...);
}

/// The concatenation of any number of datasets of one type `S`, chosen at run time (for
/// example one per file). The components are shared by every copy.
template <Dataset S>
class ConcatDataset {
 public:
  /// The concatenation of `components`, in order.
  explicit ConcatDataset(std::vector<S> components) {
    auto state = std::make_shared<State>();
    state->offsets.reserve(components.size() + 1);
    state->offsets.push_back(0);
    for (const S& component : components)
      state->offsets.push_back(state->offsets.back() + component.size());
    state->components = std::move(components);
    state_ = std::move(state);
  }

  /// Total number of samples.
  [[nodiscard]] std::size_t size() const noexcept { return state_->offsets.back(); }

  /// Sample `index` of the concatenation; throws `UsageError` when `index >= size()`.
  [[nodiscard]] detail::get_result_t<S> get(std::size_t index) const {
    stoke::check_index(index, size(), "ConcatDataset");
    const std::size_t component = detail::find_component(state_->offsets, index);
    return state_->components[component].get(index - state_->offsets[component]);
  }

  /// The components.
  [[nodiscard]] const std::vector<S>& components() const noexcept { return state_->components; }

 private:
  struct State {
    std::vector<S> components;
    std::vector<std::size_t> offsets;
  };
  std::shared_ptr<const State> state_;
};

/// The concatenation of `components`, as a `ConcatDataset`.
template <Dataset S>
[[nodiscard]] ConcatDataset<S> concat(std::vector<S> components) {
  return ConcatDataset<S>(std::move(components));
}

}  // namespace stoke

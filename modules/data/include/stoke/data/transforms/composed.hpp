#pragma once
/// @file
/// Concatenation: `ComposedDataset` / `stoke::compose(a, b, ...)` over datasets of different
/// types, and `ConcatDataset` / `stoke::concat(parts)` over many datasets of one type.

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

/// The part holding `index`, given `offsets` (`offsets[k]` is the first index of part `k`,
/// the last entry the total size; requires `index < offsets.back()`): binary search, which
/// skips empty parts.
[[nodiscard]] inline std::size_t find_part(std::span<const std::size_t> offsets,
                                           std::size_t index) noexcept {
  const auto ends = offsets.subspan(1);
  return static_cast<std::size_t>(std::upper_bound(ends.begin(), ends.end(), index) - ends.begin());
}

}  // namespace detail

/// The samples of each part in turn: indices `[0, first.size())` read the first part, the
/// next ones the second part, and so on. Every part has the same item type; `get` returns their
/// common reference (a reference when every part returns one, else a value).
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
      : parts_(std::move(first), std::move(rest)...) {
    std::apply(
        [this](const auto&... part) {
          std::size_t k = 0;
          ((offsets_[k + 1] = offsets_[k] + part.size(), ++k), ...);
        },
        parts_);
  }

  /// Total number of samples.
  [[nodiscard]] std::size_t size() const noexcept { return offsets_.back(); }

  /// Sample `index` of the concatenation; throws `UsageError` when `index >= size()`.
  [[nodiscard]] reference get(std::size_t index) const {
    detail::check_index(index, size(), "ComposedDataset");
    static constexpr std::array<Getter, kParts> getters =
        make_getters(std::make_index_sequence<kParts>{});
    const std::size_t part = detail::find_part(offsets_, index);
    return getters[part](*this, index - offsets_[part]);
  }

  /// The parts.
  [[nodiscard]] const std::tuple<First, Rest...>& parts() const noexcept { return parts_; }

 private:
  static constexpr std::size_t kParts = 1 + sizeof...(Rest);
  using Getter = reference (*)(const ComposedDataset&, std::size_t);

  template <std::size_t K>
  static reference get_from(const ComposedDataset& self, std::size_t index) {
    return std::get<K>(self.parts_).get(index);
  }

  template <std::size_t... K>
  static constexpr std::array<Getter, kParts> make_getters(std::index_sequence<K...>) {
    return {&get_from<K>...};
  }

  std::tuple<First, Rest...> parts_;
  std::array<std::size_t, kParts + 1> offsets_{};
};

/// The concatenation of `parts...` (copies), as a `ComposedDataset`.
template <class... Parts>
  requires(sizeof...(Parts) > 0)
[[nodiscard]] auto compose(Parts&&... parts) {
  return ComposedDataset<std::remove_cvref_t<Parts>...>(std::forward<Parts>(parts)...);
}

/// The concatenation of any number of datasets of one type `S`, chosen at run time (for
/// example one per file). The parts are shared by every copy.
template <Dataset S>
class ConcatDataset {
 public:
  /// The concatenation of `parts`, in order.
  explicit ConcatDataset(std::vector<S> parts) {
    auto state = std::make_shared<State>();
    state->offsets.reserve(parts.size() + 1);
    state->offsets.push_back(0);
    for (const S& part : parts) state->offsets.push_back(state->offsets.back() + part.size());
    state->parts = std::move(parts);
    state_ = std::move(state);
  }

  /// Total number of samples.
  [[nodiscard]] std::size_t size() const noexcept { return state_->offsets.back(); }

  /// Sample `index` of the concatenation; throws `UsageError` when `index >= size()`.
  [[nodiscard]] detail::get_result_t<S> get(std::size_t index) const {
    detail::check_index(index, size(), "ConcatDataset");
    const std::size_t part = detail::find_part(state_->offsets, index);
    return state_->parts[part].get(index - state_->offsets[part]);
  }

  /// The parts.
  [[nodiscard]] const std::vector<S>& parts() const noexcept { return state_->parts; }

 private:
  struct State {
    std::vector<S> parts;
    std::vector<std::size_t> offsets;
  };
  std::shared_ptr<const State> state_;
};

/// The concatenation of `parts`, as a `ConcatDataset`.
template <Dataset S>
[[nodiscard]] ConcatDataset<S> concat(std::vector<S> parts) {
  return ConcatDataset<S>(std::move(parts));
}

}  // namespace stoke

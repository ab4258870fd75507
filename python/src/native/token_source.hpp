#pragma once
/// @file
/// `TokenSource`: a token store (Megatron `.bin` + `.idx`, one store or many shards, integer
/// tokens of any width up to 32 bits) as a dataset of 32-bit token sequences, the items stoke's
/// sequence planners batch.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <span>
#include <string>
#include <system_error>
#include <utility>
#include <variant>
#include <vector>

#include <stoke/core/error.hpp>
#include <stoke/sequences/sequence_plan.hpp>
#include <stoke/sequences/sharded_token_store.hpp>

namespace stoke_python {

/// The tokens of one sequence as 32-bit integers: a view into the mapped store when it holds
/// `int32` tokens, else a widened copy. Keeps what it views alive.
class SequenceTokens {
 public:
  /// A view of `values`, kept valid by `owner`.
  SequenceTokens(std::span<const std::int32_t> values, std::shared_ptr<const void> owner)
      : values_(values), owner_(std::move(owner)) {}
  /// Tokens widened from `values`.
  template <class T>
  explicit SequenceTokens(std::span<const T> values) {
    auto widened = std::make_shared<std::vector<std::int32_t>>(values.begin(), values.end());
    values_ = *widened;
    owner_ = std::move(widened);
  }

  /// The tokens.
  operator std::span<const std::int32_t>() const noexcept {  // NOLINT(google-explicit-constructor)
    return values_;
  }

 private:
  std::span<const std::int32_t> values_;
  std::shared_ptr<const void> owner_;
};

/// One or more token stores read in place (or other token sources, one after another), as one
/// dataset of their sequences in order; the
/// stores must hold integer tokens of one type of at most 32 bits (uint8, int8, int16, uint16,
/// int32). Copies share the stores.
class TokenSource {
 public:
  /// The stores `<prefix>.bin` + `<prefix>.idx` of `prefixes`, in order. Throws `InputError`
  /// naming the file (and the offset) when one is missing, corrupt, of another token type than
  /// the first, or of a token type that does not fit 32-bit tokens.
  explicit TokenSource(std::vector<std::filesystem::path> prefixes) {
    if (prefixes.empty()) throw stoke::UsageError("stoke_loader: a token source needs a store");
    const stoke::TokenStorePaths first = stoke::token_store_paths(prefixes.front());
    std::error_code error;
    const auto bin_size = std::filesystem::file_size(first.bin, error);
    if (error) {
      throw stoke::InputError("stoke_loader: cannot read token store file " + first.bin.string() +
                              ": " + error.message());
    }
    const stoke::TokenIndex index(first.idx, first.bin, static_cast<std::size_t>(bin_size));
    if (!open_as<std::uint8_t, std::int8_t, std::int16_t, std::uint16_t, std::int32_t>(
            index.dtype(), prefixes)) {
      throw stoke::InputError("stoke_loader: token store " + first.idx.string() +
                              " holds tokens of type " + stoke::dtype_name(index.dtype()) +
                              ": sequences read integer tokens of at most 32 bits");
    }
  }

  /// The sequences of `parts`, one after another (a mixture's sources: its dataset), whatever
  /// their token types.
  explicit TokenSource(std::vector<TokenSource> parts)
      : parts_(std::make_shared<const Parts>(std::move(parts))) {
    if (parts_->sources.empty())
      throw stoke::UsageError("stoke_loader: a token source needs a store");
  }

  /// Number of sequences of all stores.
  [[nodiscard]] std::size_t size() const noexcept {
    if (parts_) return parts_->offsets.back();
    return std::visit([](const auto& store) { return store->size(); }, store_);
  }

  /// The tokens of sequence `index`. Throws `UsageError` when out of range.
  [[nodiscard]] SequenceTokens get(std::size_t index) const {
    if (parts_) {
      const auto [part, at] = parts_->locate(index);
      return parts_->sources[part].get(at);
    }
    return std::visit(
        [index](const auto& store) {
          auto row = store->get(index);
          using T = typename decltype(row.values)::value_type;
          if constexpr (std::is_same_v<std::remove_const_t<T>, std::int32_t>) {
            return SequenceTokens(row.values, std::move(row.owner));
          } else {
            return SequenceTokens(std::span<const std::remove_const_t<T>>(row.values));
          }
        },
        store_);
  }

  /// The length of every sequence, read from the indexes in place (for the planners).
  [[nodiscard]] stoke::DocumentLengths lengths() const {
    if (parts_) {
      std::vector<stoke::DocumentLengths> each;
      for (const TokenSource& source : parts_->sources) each.push_back(source.lengths());
      return stoke::DocumentLengths(size(), [parts = parts_, each](std::size_t i) {
        const auto [part, at] = parts->locate(i);
        return each[part](at);
      });
    }
    return std::visit(
        [](const auto& store) {
          return stoke::DocumentLengths(store->size(), [store](std::size_t i) {
            const auto [k, sequence] = store->locate(i);
            return static_cast<std::size_t>(store->lengths(k)[sequence]);
          });
        },
        store_);
  }

  /// Tokens of all sequences.
  [[nodiscard]] std::size_t token_count() const {
    if (parts_) return parts_->sum([](const TokenSource& s) { return s.token_count(); });
    return std::visit(
        [](const auto& store) {
          std::size_t total = 0;
          for (std::size_t k = 0; k < store->shard_count(); ++k)
            total += store->index(k).token_count();
          return total;
        },
        store_);
  }

  /// Number of stores.
  [[nodiscard]] std::size_t store_count() const {
    if (parts_) return parts_->sum([](const TokenSource& s) { return s.store_count(); });
    return std::visit([](const auto& store) { return store->shard_count(); }, store_);
  }

  /// The name of the token type (`uint16`, ...).
  [[nodiscard]] std::string dtype() const {
    if (parts_) {  // one name, or each part's joined by '+'
      std::string names = parts_->sources.front().dtype();
      for (const TokenSource& source : parts_->sources) {
        if (source.dtype() != parts_->sources.front().dtype()) names += "+" + source.dtype();
      }
      return names;
    }
    return std::visit([](const auto& store) { return stoke::dtype_name(store->index(0).dtype()); },
                      store_);
  }

 private:
  template <class T>
  using Store = std::shared_ptr<const stoke::ShardedTokenStore<T>>;

  /// Opens the stores as `ShardedTokenStore<T>` for the `T` of `T...` whose dtype is `dtype`;
  /// false when none is.
  template <class... T>
  bool open_as(stoke::DType dtype, std::vector<std::filesystem::path>& prefixes) {
    return ((dtype == stoke::dtype_of<T>() &&
             (store_ = std::make_shared<const stoke::ShardedTokenStore<T>>(std::move(prefixes)),
              true)) ||
            ...);
  }

  /// The sources of a concatenation, and where each begins.
  struct Parts {
    explicit Parts(std::vector<TokenSource> parts) : sources(std::move(parts)) {
      for (const TokenSource& source : sources) offsets.push_back(offsets.back() + source.size());
    }
    /// The part that holds sequence `index` of the concatenation, and its index there.
    [[nodiscard]] std::pair<std::size_t, std::size_t> locate(std::size_t index) const {
      if (index >= offsets.back()) {
        throw stoke::UsageError("stoke_loader: sequence " + std::to_string(index) +
                                " is past the token sources' " + std::to_string(offsets.back()));
      }
      const auto after = std::upper_bound(offsets.begin(), offsets.end(), index);
      const auto part = static_cast<std::size_t>(after - offsets.begin()) - 1;
      return {part, index - offsets[part]};
    }
    /// The sum of `count` over the parts.
    template <class F>
    [[nodiscard]] std::size_t sum(F count) const {
      std::size_t total = 0;
      for (const TokenSource& source : sources) total += count(source);
      return total;
    }
    std::vector<TokenSource> sources;
    std::vector<std::size_t> offsets{0};
  };

  std::variant<Store<std::uint8_t>, Store<std::int8_t>, Store<std::int16_t>, Store<std::uint16_t>,
               Store<std::int32_t>>
      store_;
  std::shared_ptr<const Parts> parts_;  ///< set for a concatenation of sources
};

}  // namespace stoke_python

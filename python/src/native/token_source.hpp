#pragma once
/// @file
/// `TokenSource`: token stores (Megatron `.bin` + `.idx`, one store or many shards, integer
/// tokens of any width up to 32 bits), read in place from files or through a byte store
/// (`s3://`, `http(s)://`, `file://`), as a dataset of 32-bit token sequences, the items
/// stoke's sequence planners batch.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <numeric>
#include <optional>
#include <span>
#include <string>
#include <system_error>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include <stoke/core/error.hpp>
#include <stoke/data/shard_begins.hpp>
#include <stoke/data/shard_cache.hpp>
#include <stoke/sequences/megatron_dtype.hpp>
#include <stoke/sequences/sequence_plan.hpp>
#include <stoke/sequences/sharded_token_store.hpp>
#include <stoke/sequences/stored_token_store.hpp>
#include <stoke/sequences/token_index.hpp>
#include <stoke/storage/byte_store.hpp>

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

/// Whether `Store` (a `TokenSource`'s pointer to a token store) is a `stoke::StoredTokenStore`.
template <class Store>
inline constexpr bool is_stored_v = false;
template <class T>
inline constexpr bool is_stored_v<std::shared_ptr<const stoke::StoredTokenStore<T>>> = true;

/// One or more token stores, read in place from files or fetched through a byte store (or
/// other token sources, one after another), as one dataset of their sequences in order; the
/// stores must hold integer tokens of one type of at most 32 bits (uint8, int8, int16, uint16,
/// int32). Copies share the stores.
class TokenSource {
 public:
  /// The stores `<prefix>.bin` + `<prefix>.idx` of `prefixes`, in order, their `.bin` files
  /// mapped through a shard cache of `cache`. Throws `InputError` naming the file (and the
  /// offset) when one is missing, corrupt, of another token type than the first, or of a token
  /// type that does not fit 32-bit tokens.
  explicit TokenSource(std::vector<std::filesystem::path> prefixes,
                       stoke::ShardCacheOptions cache = {}) {
    if (prefixes.empty()) throw stoke::UsageError("stoke_loader: a token source needs a store");
    const stoke::TokenStorePaths first = stoke::token_store_paths(prefixes.front());
    std::error_code error;
    const auto bin_size = std::filesystem::file_size(first.bin, error);
    if (error) {
      throw stoke::InputError("stoke_loader: cannot read token store file " + first.bin.string() +
                              ": " + error.message());
    }
    const stoke::TokenIndex index(first.idx, first.bin, static_cast<std::size_t>(bin_size));
    for (const auto& prefix : prefixes) names_.push_back(prefix.string());
    if (!open_as<Local, std::uint8_t, std::int8_t, std::int16_t, std::uint16_t, std::int32_t>(
            index.dtype(), prefixes, cache)) {
      throw stoke::InputError("stoke_loader: token store " + first.idx.string() +
                              " holds tokens of type " + stoke::dtype_name(index.dtype()) +
                              ": sequences read integer tokens of at most 32 bits");
    }
  }

  /// The stores `<prefix>.bin` + `<prefix>.idx` of `store` for each of `prefixes` (keys), in
  /// order, read as `stoke::StoredTokenStore` reads them: every index read and checked now,
  /// each `.bin` fetched whole into a shard cache of `cache` when a sequence of it is read (or
  /// ahead, see `read_ahead`). Throws `InputError` naming the URL (and the offset) when an
  /// object is missing, an index is corrupt or of another token type than the first, or the
  /// first holds tokens that do not fit 32-bit tokens.
  TokenSource(const std::shared_ptr<const stoke::storage::ByteStore>& store,
              std::vector<std::string> prefixes, stoke::ShardCacheOptions cache) {
    if (prefixes.empty()) throw stoke::UsageError("stoke_loader: a token source needs a store");
    for (const std::string& prefix : prefixes) names_.push_back(store->describe(prefix));
    const std::string first_idx = prefixes.front() + ".idx";
    const std::optional<stoke::DType> dtype = header_dtype(*store, first_idx);
    // An index whose header names no token type (or that cannot be read) is opened as int32
    // tokens: opening checks it, and refuses it naming its URL and the offset.
    if (!open_as<Stored, std::uint8_t, std::int8_t, std::int16_t, std::uint16_t, std::int32_t>(
            dtype.value_or(stoke::DType::i32), store, prefixes, cache)) {
      throw stoke::InputError("stoke_loader: token store " + store->describe(first_idx) +
                              " holds tokens of type " + stoke::dtype_name(*dtype) +
                              ": sequences read integer tokens of at most 32 bits");
    }
  }

  /// The sequences of `parts`, one after another (a mixture's sources: its dataset), whatever
  /// their token types.
  explicit TokenSource(std::vector<TokenSource> parts)
      : parts_(std::make_shared<const Parts>(std::move(parts))) {
    if (parts_->sources.empty())
      throw stoke::UsageError("stoke_loader: a token source needs a store");
    for (const TokenSource& source : parts_->sources) {
      names_.insert(names_.end(), source.names_.begin(), source.names_.end());
    }
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
            const auto [k, sequence] = stoke::locate_in_shards(store->shard_begins(), i);
            return static_cast<std::size_t>(store->lengths(k)[sequence]);
          });
        },
        store_);
  }

  /// Tokens of all sequences.
  [[nodiscard]] std::size_t token_count() const {
    if (parts_) return parts_->sum([](const TokenSource& s) { return s.token_count(); });
    return std::visit([](const auto& store) { return tokens_of(*store); }, store_);
  }

  /// Number of stores.
  [[nodiscard]] std::size_t store_count() const {
    if (parts_) return parts_->sum([](const TokenSource& s) { return s.store_count(); });
    return std::visit([](const auto& store) { return store->shard_begins().size(); }, store_);
  }

  /// The stores, in order: their prefixes (paths), or for stores read through a byte store
  /// their URLs, each followed by the endpoint it is read from.
  [[nodiscard]] const std::vector<std::string>& names() const noexcept { return names_; }

  /// The name of the token type (`uint16`, ...).
  [[nodiscard]] std::string dtype() const {
    if (parts_) {  // one name, or each part's joined by '+'
      std::string names = parts_->sources.front().dtype();
      for (const TokenSource& source : parts_->sources) {
        if (source.dtype() != parts_->sources.front().dtype()) names += "+" + source.dtype();
      }
      return names;
    }
    return std::visit([](const auto& store) { return stoke::dtype_name(token_type(*store)); },
                      store_);
  }

  /// Tells stores read through a byte store to fetch every `.bin` object ahead, in order, on
  /// their I/O threads (a loader over the source calls it: a sequence plan reads documents of
  /// every store, in an order across them); stores read in place map theirs when read.
  void read_ahead() const {
    if (parts_) {
      for (const TokenSource& source : parts_->sources) source.read_ahead();
      return;
    }
    std::visit(
        [](const auto& store) {
          if constexpr (is_stored_v<std::remove_cvref_t<decltype(store)>>) {
            std::vector<std::size_t> all(store->shard_begins().size());
            std::iota(all.begin(), all.end(), std::size_t{0});
            store->read_ahead(all);
          }
        },
        store_);
  }

 private:
  template <class T>
  using Local = std::shared_ptr<const stoke::ShardedTokenStore<T>>;
  template <class T>
  using Stored = std::shared_ptr<const stoke::StoredTokenStore<T>>;

  /// Opens the stores as `Kind<T>` (`Local`, `Stored`) for the `T` of `T...` whose dtype is
  /// `dtype`, passing copies of `args` to its constructor; false when none is.
  template <template <class> class Kind, class... T, class... Args>
  bool open_as(stoke::DType dtype, const Args&... args) {
    return ((dtype == stoke::dtype_of<T>() &&
             (store_ = std::make_shared<const typename Kind<T>::element_type>(args...), true)) ||
            ...);
  }

  /// The token type that the header of the index `idx_key` of `store` names, read by range;
  /// none when it names none or cannot be read: missing, shorter than a header (a range past
  /// its end), or a failed transfer. Opening the store reads it again and says why.
  static std::optional<stoke::DType> header_dtype(const stoke::storage::ByteStore& store,
                                                  const std::string& idx_key) {
    try {
      const std::vector<std::byte> header =
          store.read_range(idx_key, 0, stoke::TokenIndexHeader::size);
      if (header.size() <= stoke::TokenIndexHeader::dtype_offset) return std::nullopt;
      return stoke::megatron_dtype(
          std::to_integer<std::uint8_t>(header[stoke::TokenIndexHeader::dtype_offset]));
    } catch (const stoke::Error&) {
      return std::nullopt;
    }
  }

  /// Tokens of the stores of `store`: their `.bin` files' tokens.
  template <class T>
  static std::size_t tokens_of(const stoke::ShardedTokenStore<T>& store) {
    std::size_t total = 0;
    for (std::size_t k = 0; k < store.shard_count(); ++k) total += store.index(k).token_count();
    return total;
  }
  /// Tokens of the stores of `store`: their sequences' lengths, summed.
  template <class T>
  static std::size_t tokens_of(const stoke::StoredTokenStore<T>& store) {
    std::size_t total = 0;
    for (std::size_t k = 0; k < store.shard_begins().size(); ++k) {
      for (const std::int32_t length : store.lengths(k)) total += static_cast<std::size_t>(length);
    }
    return total;
  }

  /// The token type of `store`.
  template <class T>
  static constexpr stoke::DType token_type(const stoke::ShardedTokenStore<T>&) {
    return stoke::dtype_of<T>();
  }
  template <class T>
  static constexpr stoke::DType token_type(const stoke::StoredTokenStore<T>&) {
    return stoke::dtype_of<T>();
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
      return stoke::locate_in_shards(offsets, index);
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

  std::variant<Local<std::uint8_t>, Local<std::int8_t>, Local<std::int16_t>, Local<std::uint16_t>,
               Local<std::int32_t>, Stored<std::uint8_t>, Stored<std::int8_t>, Stored<std::int16_t>,
               Stored<std::uint16_t>, Stored<std::int32_t>>
      store_;
  std::shared_ptr<const Parts> parts_;  ///< set for a concatenation of sources
  std::vector<std::string> names_;      ///< the stores' prefixes or URLs
};

}  // namespace stoke_python

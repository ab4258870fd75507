#pragma once
/// @file
/// `ShardedTokenStore<T>`: one dataset over many Megatron token stores (a shard per
/// `.bin`/`.idx` pair), their `.bin` files mapped through a `ShardCache`, and
/// `token_store_prefixes` (the stores in a directory).

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <span>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include <stoke/core/error.hpp>
#include <stoke/data/check_index.hpp>
#include <stoke/data/shard_begins.hpp>
#include <stoke/data/shard_cache.hpp>
#include <stoke/data/sources/array_shard.hpp>
#include <stoke/data/sources/mmap_records.hpp>
#include <stoke/data/sources/sharded_arrays.hpp>
#include <stoke/sequences/token_index.hpp>
#include <stoke/sequences/token_store.hpp>

namespace stoke {

/// The prefixes of the token stores in `directory`: every `*.idx` file, sorted by name, less
/// its extension. Throws `InputError` naming the directory when it cannot be read or holds none.
inline std::vector<std::filesystem::path> token_store_prefixes(
    const std::filesystem::path& directory) {
  std::vector<std::filesystem::path> prefixes = files_matching(directory, "*.idx");
  for (auto& prefix : prefixes) prefix.replace_extension();
  return prefixes;
}

/// The sequences of many token stores as one dataset: shard `k` is store `k`, and its
/// sequences follow those of store `k - 1`. Each item is an `ArrayRow<T>` viewing the tokens in
/// place in the mapped `.bin` file, which the row keeps mapped.
///
/// - Opening maps and checks every `.idx` file (see `TokenIndex`) against the size of its
///   `.bin` file; the indexes stay mapped, so `lengths(k)` costs nothing and touches no token.
/// - The `.bin` files are mapped through a `ShardCache`: at most `cache.resident` of them at
///   once, shared by every copy (every worker thread and local device), mapped ahead in the
///   order the epoch visits them (`read_ahead`). A `.bin` file whose size changed since
///   opening is refused by name when it is mapped.
/// - A `ShardedDataset`: `shard_begins()` says where each store begins, so `shuffle_shards` and
///   the shard-granular rank split keep whole stores together.
/// - `get(i)` finds the store of sequence `i` by binary search over the stores' first
///   sequences: O(log stores).
template <TokenType T>
class ShardedTokenStore {
 public:
  /// The stores `<prefix>.bin` + `<prefix>.idx` for each of `prefixes`, in this order. Throws
  /// `UsageError` when there are none, and `InputError` naming the file (and offset) when one
  /// cannot be read, is corrupt, or holds tokens of another type than `T`.
  explicit ShardedTokenStore(std::vector<std::filesystem::path> prefixes,
                             ShardCacheOptions cache = {})
      : shared_(std::make_shared<Shared>()) {
    if (prefixes.empty()) throw UsageError("stoke: ShardedTokenStore needs at least one store");
    Shared& s = *shared_;
    s.prefixes = std::move(prefixes);
    std::size_t sequences = 0;
    for (const auto& prefix : s.prefixes) {
      const TokenStorePaths paths = token_store_paths(prefix);
      s.indexes.emplace_back(paths.idx, paths.bin, file_size(paths.bin));
      detail::check_token_type<T>(s.indexes.back(), "ShardedTokenStore");
      s.begins.push_back(sequences);
      sequences += s.indexes.back().sequence_count();
    }
    s.size = sequences;
    s.cache = std::make_unique<ShardCache<Bin>>(
        s.prefixes.size(), [&s](std::size_t k) { return s.map_bin(k); },
        [](const Bin& bin) { return bin->bytes().size(); }, cache);
  }

  /// The stores in `directory` (see `token_store_prefixes`).
  explicit ShardedTokenStore(const std::filesystem::path& directory, ShardCacheOptions cache = {})
      : ShardedTokenStore(token_store_prefixes(directory), cache) {}

  /// Sequences of all stores together.
  [[nodiscard]] std::size_t size() const noexcept { return shared_->size; }

  /// The tokens of sequence `index`, viewing its mapped `.bin` file, which the row keeps
  /// mapped. Throws `UsageError` when out of range, and `InputError` naming the file when its
  /// `.bin` file cannot be mapped or changed size since opening.
  [[nodiscard]] ArrayRow<T> get(std::size_t index) const {
    stoke::check_index(index, size(), "ShardedTokenStore");
    const auto [k, sequence] = locate(index);
    const TokenIndex& idx = shared_->indexes[k];
    const auto length = static_cast<std::size_t>(idx.lengths()[sequence]);
    const std::shared_ptr<const Bin> bin = shared_->cache->acquire(k);
    if (length == 0) return {{}, bin};
    const std::byte* first = (*bin)->bytes().data() + idx.pointers()[sequence];
    return {{reinterpret_cast<const T*>(first), length}, bin};
  }

  /// The store of sequence `index` (`index < size()`) and the sequence within it.
  [[nodiscard]] std::pair<std::size_t, std::size_t> locate(std::size_t index) const {
    return locate_in_shards(shared_->begins, index);
  }

  /// Number of stores.
  [[nodiscard]] std::size_t shard_count() const noexcept { return shared_->prefixes.size(); }
  /// Where each store's sequences begin.
  [[nodiscard]] const std::vector<std::size_t>& shard_begins() const noexcept {
    return shared_->begins;
  }
  /// The stores' prefixes.
  [[nodiscard]] const std::vector<std::filesystem::path>& prefixes() const noexcept {
    return shared_->prefixes;
  }
  /// The index of store `k` (its lengths, pointers, documents), mapped for as long as the
  /// dataset lives.
  [[nodiscard]] const TokenIndex& index(std::size_t k) const {
    stoke::check_index(k, shard_count(), "ShardedTokenStore::index");
    return shared_->indexes[k];
  }
  /// The length of every sequence of store `k`, read from its index in place.
  [[nodiscard]] UnalignedSpan<std::int32_t> lengths(std::size_t k) const {
    return index(k).lengths();
  }

  /// The order the next epoch visits the stores in (the loader calls it): the cache maps the
  /// next ones ahead.
  void read_ahead(std::span<const std::size_t> shards) const {
    shared_->cache->plan(std::vector<std::size_t>(shards.begin(), shards.end()));
  }

  /// What the cache did so far: `.bin` files mapped, bytes, hits, waits.
  [[nodiscard]] ShardCacheStats cache_stats() const { return shared_->cache->stats(); }

 private:
  /// A mapped `.bin` file.
  using Bin = std::shared_ptr<const detail::FileMapping>;

  struct Shared {
    std::vector<std::filesystem::path> prefixes;
    std::vector<TokenIndex> indexes;
    std::vector<std::size_t> begins;
    std::size_t size = 0;
    std::unique_ptr<ShardCache<Bin>> cache;

    /// Maps the `.bin` file of store `k`, checking it has the size its index was checked with.
    Bin map_bin(std::size_t k) const {
      const TokenIndex& idx = indexes[k];
      auto bin = std::make_shared<const detail::FileMapping>(idx.bin_path());
      if (bin->bytes().size() != idx.bin_size()) {
        throw InputError("stoke: token data " + detail::quoted_path(idx.bin_path()) + " holds " +
                         std::to_string(bin->bytes().size()) + " bytes now, " +
                         std::to_string(idx.bin_size()) + " when the store was opened");
      }
      return bin;
    }
  };

  /// The size of `bin`; throws `InputError` naming it when it cannot be examined.
  static std::size_t file_size(const std::filesystem::path& bin) {
    std::error_code error;
    const auto size = std::filesystem::file_size(bin, error);
    if (error) {
      throw InputError("stoke: cannot read the size of token data " + detail::quoted_path(bin) +
                       ": " + error.message());
    }
    return static_cast<std::size_t>(size);
  }

  std::shared_ptr<Shared> shared_;
};

}  // namespace stoke

#pragma once
/// @file
/// `StoredTokenStore<T>`: Megatron token stores (`<prefix>.bin` + `<prefix>.idx`) in a byte
/// store (local, HTTP, S3), as `ShardedTokenStore` reads them from files: each index read and
/// checked at open, each `.bin` fetched whole through a `ShardCache` when the epoch reaches it.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include <stoke/core/error.hpp>
#include <stoke/data/check_index.hpp>
#include <stoke/data/shard_begins.hpp>
#include <stoke/data/shard_cache.hpp>
#include <stoke/data/sources/array_shard.hpp>
#include <stoke/sequences/megatron_dtype.hpp>
#include <stoke/sequences/token_index.hpp>
#include <stoke/sequences/unaligned_span.hpp>
#include <stoke/storage/byte_store.hpp>

namespace stoke {

/// The sequences of many token stores in a byte store, as one dataset: store `k` is shard `k`,
/// its sequences after those of store `k - 1` (the same items, in the same order, as
/// `ShardedTokenStore` over the same files). Each item is an `ArrayRow<T>` viewing its tokens
/// in the fetched `.bin` object, which the row keeps alive.
///
/// - Opening reads every `.idx` object whole (they are small) and checks it as `TokenIndex`
///   checks a file, against the size of its `.bin` object (`stat`, no read): a corrupt index,
///   or one of tokens of another type than `T`, is an `InputError` naming its URL and the byte
///   offset.
/// - A `.bin` object is fetched whole when a sequence of it is read, into a `ShardCache` of
///   `cache.resident` stores whose I/O threads fetch the epoch's next ones ahead (`read_ahead`);
///   one whose size is not the size opening saw is refused naming its URL. A failed transfer
///   is the store's `DataError`.
template <TokenType T>
class StoredTokenStore {
 public:
  /// The stores `<prefix>.bin` + `<prefix>.idx` of `store` for each of `prefixes` (keys less
  /// their extension), in this order, read through a cache of `cache`. Throws `UsageError`
  /// when there are none, and what opening throws (see the class).
  StoredTokenStore(std::shared_ptr<const storage::ByteStore> store,
                   std::vector<std::string> prefixes, ShardCacheOptions cache = {})
      : shared_(std::make_shared<Shared>()) {
    if (prefixes.empty()) throw UsageError("stoke: StoredTokenStore needs at least one store");
    Shared& s = *shared_;
    s.store = std::move(store);
    std::size_t sequences = 0;
    std::vector<storage::ObjectInfo> bins;
    for (const std::string& prefix : prefixes) {
      Index index = open_index(*s.store, prefix);
      bins.push_back({index.bin_key, index.bin_size, ""});
      s.begins.push_back(sequences);
      sequences += index.layout.sequences;
      s.indexes.push_back(std::move(index));
    }
    s.size = sequences;
    s.store->prepare_reads(bins, read_ahead_depth(cache),
                           "the token stores of " + s.store->describe(""));
    s.cache = std::make_unique<ShardCache<Bin>>(
        s.indexes.size(), [&s](std::size_t k) { return s.fetch_bin(k); },
        [](const Bin& bin) { return bin->size(); }, cache);
  }

  /// Sequences of all stores together.
  [[nodiscard]] std::size_t size() const noexcept { return shared_->size; }

  /// The tokens of sequence `index`, viewing its fetched `.bin` object, which the row keeps
  /// alive. Throws `UsageError` when out of range, and what the fetch throws.
  [[nodiscard]] ArrayRow<T> get(std::size_t index) const {
    stoke::check_index(index, size(), "StoredTokenStore");
    const auto [k, sequence] = locate_in_shards(shared_->begins, index);
    const Index& idx = shared_->indexes[k];
    const auto length = static_cast<std::size_t>(idx.lengths()[sequence]);
    std::shared_ptr<const Bin> bin = shared_->cache->acquire(k);
    if (length == 0) return {{}, bin};
    const std::byte* first = (*bin)->data() + idx.pointers()[sequence];
    return {{reinterpret_cast<const T*>(first), length}, std::move(bin)};
  }

  /// Where each store's sequences begin.
  [[nodiscard]] const std::vector<std::size_t>& shard_begins() const noexcept {
    return shared_->begins;
  }

  /// The length of every sequence of store `k`, read from its index.
  [[nodiscard]] UnalignedSpan<std::int32_t> lengths(std::size_t k) const {
    stoke::check_index(k, shared_->indexes.size(), "StoredTokenStore::lengths");
    return shared_->indexes[k].lengths();
  }

  /// The order the next epoch visits the stores in (the loader calls it): the cache fetches
  /// the next ones ahead.
  void read_ahead(std::span<const std::size_t> shards) const {
    std::vector<std::string> keys;
    for (const std::size_t k : shards) keys.push_back(shared_->indexes.at(k).bin_key);
    shared_->store->plan_reads(keys);
    shared_->cache->plan(std::vector<std::size_t>(shards.begin(), shards.end()));
  }

  /// What the cache did so far: `.bin` objects fetched, bytes, hits, waits.
  [[nodiscard]] ShardCacheStats cache_stats() const { return shared_->cache->stats(); }

 private:
  /// A fetched `.bin` object.
  using Bin = std::shared_ptr<const std::vector<std::byte>>;

  /// One store's index, read and checked.
  struct Index {
    std::vector<std::byte> bytes;  // the `.idx` object
    detail::TokenIndexLayout layout;
    std::string bin_key;
    std::uint64_t bin_size = 0;

    [[nodiscard]] UnalignedSpan<std::int32_t> lengths() const noexcept {
      return {bytes.data() + TokenIndexHeader::size, layout.sequences};
    }
    [[nodiscard]] UnalignedSpan<std::int64_t> pointers() const noexcept {
      return {bytes.data() + layout.pointers_offset, layout.sequences};
    }
  };

  /// The index of the store `prefix` of `store`, checked against its `.bin` object's size.
  static Index open_index(const storage::ByteStore& store, const std::string& prefix) {
    Index index{store.read(prefix + ".idx"), {}, prefix + ".bin", 0};
    index.bin_size = store.stat(index.bin_key).size;
    const std::string idx_name = store.describe(prefix + ".idx");
    index.layout = detail::TokenIndexCheck(index.bytes, idx_name, store.describe(index.bin_key),
                                           static_cast<std::size_t>(index.bin_size))
                       .run();
    if (index.layout.dtype != dtype_of<T>()) {
      throw InputError("stoke: token index '" + idx_name + "' at byte offset " +
                       std::to_string(TokenIndexHeader::dtype_offset) + ": its tokens are " +
                       dtype_name(index.layout.dtype) + ", not the " + dtype_name(dtype_of<T>()) +
                       " this StoredTokenStore reads");
    }
    return index;
  }

  struct Shared {
    std::shared_ptr<const storage::ByteStore> store;
    std::unique_ptr<ShardCache<Bin>> cache;  // the fetched `.bin` objects
    std::vector<Index> indexes;              // one a store
    std::size_t size = 0;                    // sequences of all stores
    std::vector<std::size_t> begins;         // where each store's sequences begin

    /// Fetches the `.bin` object of store `k`, checking it has the size opening saw.
    Bin fetch_bin(std::size_t k) const {
      const Index& idx = indexes[k];
      auto bin = std::make_shared<const std::vector<std::byte>>(
          store->read(idx.bin_key, storage::FetchContext{.shard = k}));
      if (bin->size() != idx.bin_size) {
        throw InputError("stoke: token data " + store->describe(idx.bin_key) + " holds " +
                         std::to_string(bin->size()) + " bytes; it held " +
                         std::to_string(idx.bin_size) + " when the store was opened");
      }
      return bin;
    }
  };

  std::shared_ptr<Shared> shared_;
};

}  // namespace stoke

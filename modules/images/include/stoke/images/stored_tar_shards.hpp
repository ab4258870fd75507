#pragma once
/// @file
/// `StoredTarShards`: WebDataset tar shards in a byte store (local, HTTP, S3), opened from a
/// manifest without a read, each shard fetched through a `ShardCache` when the epoch needs it.

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
#include <stoke/data/sources/stored_shard.hpp>
#include <stoke/images/image.hpp>
#include <stoke/images/tar_shards.hpp>
#include <stoke/storage/byte_store.hpp>

namespace stoke::images {

/// The manifest of the tar shards `keys` of `store`, in this order: each one's samples and
/// bytes (read whole once, for writing a manifest). Throws what `TarShards` throws for an
/// invalid shard.
inline std::vector<StoredShard> make_tar_manifest(const storage::ByteStore& store,
                                                  const std::vector<std::string>& keys,
                                                  const TarShardsOptions& options = {}) {
  const detail::WebDatasetFormat format = detail::webdataset_format(options);
  std::vector<StoredShard> shards;
  for (const std::string& key : keys) {
    const std::vector<std::byte> bytes = store.read(key);
    shards.push_back(
        {key, detail::tar_samples(bytes, store.describe(key), format).size(), bytes.size()});
  }
  return shards;
}

/// The samples of WebDataset tar shards in a byte store, as `TarShards` reads them from files
/// (same samples, same order, same `EncodedImage`s), but:
/// - Opening reads nothing: the manifest gives each shard's samples (`make_tar_manifest`).
/// - A shard is fetched whole through the store when a sample of it is read, into a
///   `ShardCache` of `cache.resident` shards that reads the epoch's next shards ahead on its
///   I/O threads (`read_ahead`); its members are indexed then, and checked against the
///   manifest (bytes, samples) before use. A failed transfer is the store's `DataError`.
/// - An image's bytes stay in the fetched shard, which the `EncodedImage` keeps alive.
class StoredTarShards {
 public:
  /// The shards of `manifest` in `store`, read with `options` through a cache of `cache`.
  StoredTarShards(std::shared_ptr<const storage::ByteStore> store,
                  std::vector<StoredShard> manifest, TarShardsOptions options = {},
                  ShardCacheOptions cache = {})
      : shared_(std::make_shared<Shared>()) {
    if (manifest.empty()) throw UsageError("stoke: StoredTarShards needs at least one shard");
    Shared& s = *shared_;
    s.store = std::move(store);
    s.format = detail::webdataset_format(options);
    s.begins = stored_shard_begins(manifest);
    s.size = s.begins.back();
    s.begins.pop_back();
    s.manifest = std::move(manifest);
    s.store->prepare_reads(stored_objects(s.manifest), read_ahead_depth(cache),
                           "the tar shards of " + s.store->describe(""));
    s.cache = std::make_unique<ShardCache<FetchedShard>>(
        s.manifest.size(), [&s](std::size_t k) { return s.load(k); },
        [](const FetchedShard& shard) { return shard.bytes->size(); }, cache);
  }

  /// Samples in all shards.
  [[nodiscard]] std::size_t size() const noexcept { return shared_->size; }

  /// Sample `index`: its image's bytes inside the fetched shard, its label, and
  /// `"<shard URL>:<key>"` as its source. Throws `UsageError` when out of range, and what the
  /// fetch throws.
  [[nodiscard]] EncodedImage get(std::size_t index) const {
    const auto [shard, sample] = find(index);
    const auto* data = reinterpret_cast<const std::uint8_t*>(shard->bytes->data());
    return {.bytes = {data + sample->image_offset, sample->image_size},
            .storage = shard,
            .label = sample->label,
            .source = shard->name + ":" + sample->key};
  }

  /// The label of sample `index` (its shard is fetched if it is not resident).
  [[nodiscard]] std::uint32_t label(std::size_t index) const { return find(index).second->label; }

  /// The key of sample `index`, its members' shared name (its shard is fetched if it is not
  /// resident).
  [[nodiscard]] std::string key(std::size_t index) const { return find(index).second->key; }

  /// The shards, in order, as their store names them in messages (`ByteStore::describe`: a
  /// URL without credentials, and the endpoint it is read from).
  [[nodiscard]] std::vector<std::string> shard_names() const {
    std::vector<std::string> out;
    for (const StoredShard& shard : shared_->manifest) {
      out.push_back(shared_->store->describe(shard.key));
    }
    return out;
  }

  /// Where each shard's samples begin.
  [[nodiscard]] const std::vector<std::size_t>& shard_begins() const noexcept {
    return shared_->begins;
  }

  /// The order the next epoch visits the shards in (the loader calls it): the cache fetches
  /// the next ones ahead.
  void read_ahead(std::span<const std::size_t> shards) const {
    std::vector<std::string> keys;
    for (const std::size_t k : shards) keys.push_back(shared_->manifest.at(k).key);
    shared_->store->plan_reads(keys);
    shared_->cache->plan(std::vector<std::size_t>(shards.begin(), shards.end()));
  }

  /// What the cache did so far: shards fetched, bytes, hits, waits.
  [[nodiscard]] ShardCacheStats cache_stats() const { return shared_->cache->stats(); }

 private:
  /// A fetched shard: its bytes and its samples.
  struct FetchedShard {
    std::shared_ptr<const std::vector<std::byte>> bytes;
    std::vector<detail::WebDatasetSample> samples;
    std::string name;
  };

  struct Shared {
    std::shared_ptr<const storage::ByteStore> store;
    detail::WebDatasetFormat format;
    std::vector<StoredShard> manifest;
    std::vector<std::size_t> begins;
    std::size_t size = 0;
    std::unique_ptr<ShardCache<FetchedShard>> cache;

    FetchedShard load(std::size_t k) const {
      const StoredShard& expected = manifest[k];
      FetchedShard shard{std::make_shared<const std::vector<std::byte>>(
                             store->read(expected.key, storage::FetchContext{.shard = k})),
                         {},
                         store->describe(expected.key)};
      if (shard.bytes->size() != expected.bytes) {
        throw InputError("stoke: tar " + shard.name + " has " +
                         std::to_string(shard.bytes->size()) + " bytes; the manifest says " +
                         std::to_string(expected.bytes));
      }
      shard.samples = detail::tar_samples(*shard.bytes, shard.name, format);
      if (shard.samples.size() != expected.rows) {
        throw InputError("stoke: tar " + shard.name + " holds " +
                         std::to_string(shard.samples.size()) + " samples; the manifest says " +
                         std::to_string(expected.rows));
      }
      return shard;
    }
  };

  /// The shard of sample `index`, acquired, and the sample in it.
  [[nodiscard]] std::pair<std::shared_ptr<const FetchedShard>, const detail::WebDatasetSample*>
  find(std::size_t index) const {
    stoke::check_index(index, size(), "StoredTarShards");
    const auto [k, within] = locate_in_shards(shared_->begins, index);
    std::shared_ptr<const FetchedShard> shard = shared_->cache->acquire(k);
    const detail::WebDatasetSample* sample = &shard->samples[within];
    return {std::move(shard), sample};
  }

  std::shared_ptr<Shared> shared_;
};

}  // namespace stoke::images

#pragma once
/// @file
/// `StoredShard`: one shard of a manifest (its key in a byte store, its rows or samples, its
/// bytes), and the JSON of a list of them, so that opening a dataset in a store reads nothing.

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>
#include <stoke/core/error.hpp>
#include <stoke/storage/object_info.hpp>

namespace stoke {

/// One shard of a manifest.
struct StoredShard {
  std::string key{};        ///< its key in the store
  std::size_t rows = 0;     ///< its rows (arrays) or samples (tar shards)
  std::uint64_t bytes = 0;  ///< the size of its object, checked when it is read

  /// Shards are equal when key, rows and bytes are.
  friend bool operator==(const StoredShard&, const StoredShard&) = default;
};

/// `[{"key": "a.npy", "rows": 100, "bytes": 12928}, ...]`.
inline nlohmann::json stored_shards_json(const std::vector<StoredShard>& shards) {
  nlohmann::json json = nlohmann::json::array();
  for (const StoredShard& shard : shards) {
    json.push_back({{"key", shard.key}, {"rows", shard.rows}, {"bytes", shard.bytes}});
  }
  return json;
}

/// The shards `json` lists (as `stored_shards_json` writes them); throws `InputError` naming
/// `source` when it is not such a list or is empty.
inline std::vector<StoredShard> stored_shards_from_json(const nlohmann::json& json,
                                                        std::string_view source) {
  std::vector<StoredShard> shards;
  try {
    for (const auto& shard : json) {
      shards.push_back({shard.at("key").get<std::string>(), shard.at("rows").get<std::size_t>(),
                        shard.at("bytes").get<std::uint64_t>()});
    }
  } catch (const nlohmann::json::exception& error) {
    throw InputError("stoke: manifest " + std::string(source) + ": " + error.what());
  }
  if (shards.empty()) throw InputError("stoke: manifest " + std::string(source) + ": no shards");
  return shards;
}

/// The shards as a store's objects (key and size), for `ByteStore::prepare_reads`.
inline std::vector<storage::ObjectInfo> stored_objects(const std::vector<StoredShard>& shards) {
  std::vector<storage::ObjectInfo> objects;
  for (const StoredShard& shard : shards) objects.push_back({shard.key, shard.bytes, ""});
  return objects;
}

/// The keys of `shards`, in order, as the paths `ShardedArrays` takes.
inline std::vector<std::filesystem::path> stored_shard_keys(
    const std::vector<StoredShard>& shards) {
  std::vector<std::filesystem::path> keys;
  for (const StoredShard& shard : shards) keys.emplace_back(shard.key);
  return keys;
}

/// Where each shard's rows begin when they are laid end to end, and their total.
inline std::vector<std::size_t> stored_shard_begins(const std::vector<StoredShard>& shards) {
  std::vector<std::size_t> begins;
  std::size_t rows = 0;
  for (const StoredShard& shard : shards) {
    begins.push_back(rows);
    rows += shard.rows;
  }
  begins.push_back(rows);
  return begins;
}

}  // namespace stoke

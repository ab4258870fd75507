#pragma once
/// @file
/// `.npy` shards in a byte store (local, HTTP, S3) for `ShardedArrays`: an `ArrayManifest`
/// (every shard's key, rows and bytes, and what a row holds) so that opening reads nothing
/// from the store, and `stored_npy_format`, which reads a shard through the store when the
/// shard cache needs it; and what every array format over a store shares (`.npz` shards in
/// stored_npz.hpp and record files in stored_records.hpp use it too).

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>
#include <stoke/core/error.hpp>
#include <stoke/data/sources/array_shard.hpp>
#include <stoke/data/sources/detail/npy_header.hpp>
#include <stoke/data/sources/sharded_arrays.hpp>
#include <stoke/data/sources/stored_shard.hpp>
#include <stoke/storage/byte_store.hpp>

namespace stoke {

/// What opening a sharded dataset in a store needs, so that it reads nothing remote: the element
/// type, the shape of one row and every shard's key, rows and size. As JSON:
/// `{"dtype": "float32", "row_shape": [4, 8], "shards": [{"key": "a.npy", "rows": 100,
/// "bytes": 12928}, ...]}` (dtype as `dtype_name` writes it).
struct ArrayManifest {
  DType dtype = DType::f32;              ///< the element type of every shard
  std::vector<std::size_t> row_shape{};  ///< one row's shape
  std::vector<StoredShard> shards{};     ///< in the dataset's order

  /// The keys of the shards, in order, as the paths `ShardedArrays` takes.
  [[nodiscard]] std::vector<std::filesystem::path> keys() const {
    return stored_shard_keys(shards);
  }

  /// The manifest as JSON.
  [[nodiscard]] nlohmann::json to_json() const {
    return {{"dtype", dtype_name(dtype)},
            {"row_shape", row_shape},
            {"shards", stored_shards_json(shards)}};
  }

  /// The manifest `json` holds; throws `InputError` naming `source` and what is wrong.
  static ArrayManifest from_json(const nlohmann::json& json, std::string_view source) {
    const auto fail = [&](const std::string& what) -> void {
      throw InputError("stoke: array manifest " + std::string(source) + ": " + what);
    };
    ArrayManifest manifest;
    try {
      const std::string name = json.at("dtype").get<std::string>();
      bool known = false;
      for (int d = 0; d <= static_cast<int>(DType::f64); ++d) {
        if (dtype_name(static_cast<DType>(d)) == name) {
          manifest.dtype = static_cast<DType>(d);
          known = true;
        }
      }
      if (!known) fail("unknown dtype '" + name + "'");
      manifest.row_shape = json.at("row_shape").get<std::vector<std::size_t>>();
      manifest.shards = stored_shards_from_json(json.at("shards"), source);
    } catch (const nlohmann::json::exception& error) {
      fail(error.what());
    }
    return manifest;
  }

  /// The `ArrayInfo` of shard `k`.
  [[nodiscard]] ArrayInfo info(std::size_t k) const {
    ArrayInfo info{dtype, {shards.at(k).rows}};
    info.shape.insert(info.shape.end(), row_shape.begin(), row_shape.end());
    return info;
  }
};

namespace detail {

/// Parses the `.npy` bytes of shard `key` of `store` and checks them whole.
inline NpyLayout stored_npy_layout(std::span<const std::byte> bytes,
                                   const storage::ByteStore& store, const std::string& key) {
  const NpySource source{"npy object " + store.describe(key), ""};
  NpyLayout layout = parse_npy_layout(bytes, source);
  check_npy_data(layout, bytes.size(), source, "the object");
  return layout;
}

/// The manifests of `count` arrays of each of the objects `keys` of `store`, each object read
/// whole once and its arrays' types and shapes found by `infos` (given the bytes and the key;
/// `count` of them, in order); `kind` ("npy") names the objects in errors. Throws `InputError`
/// naming the object when an array holds another type or row shape than the first object's.
inline std::vector<ArrayManifest> make_array_manifests(
    const storage::ByteStore& store, const std::vector<std::string>& keys, const std::string& kind,
    std::size_t count,
    const std::function<std::vector<ArrayInfo>(std::span<const std::byte>, const std::string&)>&
        infos) {
  std::vector<ArrayManifest> manifests(count);
  for (const std::string& key : keys) {
    const std::vector<std::byte> bytes = store.read(key);
    const std::vector<ArrayInfo> found = infos(bytes, key);
    for (std::size_t a = 0; a < count; ++a) {
      ArrayManifest& manifest = manifests[a];
      if (manifest.shards.empty()) {
        manifest.dtype = found[a].dtype;
        manifest.row_shape = found[a].row_shape();
      } else if (found[a].dtype != manifest.dtype || found[a].row_shape() != manifest.row_shape) {
        throw InputError("stoke: " + kind + " object " + store.describe(key) + " holds " +
                         describe(found[a]) + ", unlike " +
                         store.describe(manifest.shards.front().key) + " (" +
                         describe(manifest.info(0)) + ")");
      }
      manifest.shards.push_back({key, found[a].rows(), bytes.size()});
    }
  }
  return manifests;
}

/// The manifest of the one array of each of the objects `keys` of `store` that `info` finds
/// (see `make_array_manifests`).
inline ArrayManifest make_array_manifest(
    const storage::ByteStore& store, const std::vector<std::string>& keys, const std::string& kind,
    const std::function<ArrayInfo(std::span<const std::byte>, const std::string&)>& info) {
  return make_array_manifests(store, keys, kind, 1,
                              [&](std::span<const std::byte> bytes, const std::string& key) {
                                return std::vector<ArrayInfo>{info(bytes, key)};
                              })
      .front();
}

/// Makes the array of a fetched object: its bytes (which the shard may keep) and its key.
using StoredArrayReader = std::function<ArrayShard(std::shared_ptr<const std::vector<std::byte>>,
                                                   const std::filesystem::path&)>;

/// What every `ArrayFileFormat` over a store shares: a shard's header comes from `manifest`
/// (opening reads nothing); its object is read whole through `store` when the cache needs it,
/// its size checked against the manifest, made an array by `read`, and that array's type and
/// shape checked against the manifest; `prepare` and `plan` tell the store what the reader
/// reads. `kind` ("npy") names the objects in errors.
inline ArrayFileFormat stored_array_format(std::shared_ptr<const storage::ByteStore> store,
                                           const ArrayManifest& manifest, std::string kind,
                                           StoredArrayReader read) {
  auto index = std::make_shared<std::map<std::string, std::size_t, std::less<>>>();
  for (std::size_t k = 0; k < manifest.shards.size(); ++k) {
    (*index)[manifest.shards[k].key] = k;
  }
  auto shared = std::make_shared<const ArrayManifest>(manifest);
  const auto shard_of = [index, shared](const std::filesystem::path& key) {
    const auto it = index->find(key.generic_string());
    if (it == index->end()) {
      throw UsageError("stoke: '" + key.generic_string() + "' is no shard of the manifest");
    }
    return it->second;
  };
  return {.info = [shared, shard_of](
                      const std::filesystem::path& key) { return shared->info(shard_of(key)); },
          .load =
              [store, shared, shard_of, kind,
               read = std::move(read)](const std::filesystem::path& path) {
                const std::size_t k = shard_of(path);
                const std::string key = path.generic_string();
                auto bytes = std::make_shared<const std::vector<std::byte>>(
                    store->read(key, storage::FetchContext{.shard = k}));
                if (bytes->size() != shared->shards[k].bytes) {
                  throw InputError("stoke: " + kind + " object " + store->describe(key) + " has " +
                                   std::to_string(bytes->size()) + " bytes; the manifest says " +
                                   std::to_string(shared->shards[k].bytes));
                }
                ArrayShard shard = read(std::move(bytes), path);
                if (shard.info() != shared->info(k)) {
                  throw InputError("stoke: " + kind + " object " + store->describe(key) +
                                   " holds " + describe(shard.info()) + "; the manifest says " +
                                   describe(shared->info(k)));
                }
                return shard;
              },
          .prepare =
              [store, shared, kind](std::size_t window) {
                store->prepare_reads(stored_objects(shared->shards), window,
                                     "the " + kind + " shards of " + store->describe(""));
              },
          .plan =
              [store](const std::vector<std::filesystem::path>& order) {
                std::vector<std::string> keys;
                for (const auto& path : order) keys.push_back(path.generic_string());
                store->plan_reads(keys);
              }};
}

}  // namespace detail

/// The manifest of the `.npy` objects `keys` of `store`, in this order, from their bytes (for
/// writing one once; a dataset opened with it then reads nothing at open). Throws `InputError`
/// naming the object when one is not a valid `.npy` array, or holds another type or row shape
/// than the first.
inline ArrayManifest make_npy_manifest(const storage::ByteStore& store,
                                       const std::vector<std::string>& keys) {
  return detail::make_array_manifest(store, keys, "npy",
                                     [&](std::span<const std::byte> bytes, const std::string& key) {
                                       return detail::stored_npy_layout(bytes, store, key).info;
                                     });
}

/// How `ShardedArrays` reads the `.npy` shards of `manifest` from `store` (construct it with
/// `manifest.keys()`): a shard's header comes from the manifest (opening reads nothing), and
/// its object is read whole through the store when the cache needs it (on the cache's I/O
/// threads, ahead of the epoch's order), then checked against the manifest (size, dtype, shape)
/// before use. A failed transfer is the store's `DataError`, naming the shard.
inline ArrayFileFormat stored_npy_format(std::shared_ptr<const storage::ByteStore> store,
                                         const ArrayManifest& manifest) {
  auto read = [store](std::shared_ptr<const std::vector<std::byte>> bytes,
                      const std::filesystem::path& path) {
    detail::NpyLayout layout = detail::stored_npy_layout(*bytes, *store, path.generic_string());
    const auto data =
        std::span<const std::byte>(*bytes).subspan(layout.data_offset, layout.data_size);
    return ArrayShard(path, std::move(layout.info), data, std::move(bytes));
  };
  return detail::stored_array_format(std::move(store), manifest, "npy", std::move(read));
}

}  // namespace stoke

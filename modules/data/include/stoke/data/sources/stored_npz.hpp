#pragma once
/// @file
/// `.npz` shards in a byte store (local, HTTP, S3) for `ShardedArrays`: one array of each
/// archive, opened from an `ArrayManifest` (`make_npz_manifest`) so that opening reads nothing,
/// and read through the store by `stored_npz_format` when the shard cache needs it.

#include <cstddef>
#include <filesystem>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include <stoke/data/sources/array_shard.hpp>
#include <stoke/data/sources/npz.hpp>
#include <stoke/data/sources/sharded_arrays.hpp>
#include <stoke/data/sources/stored_arrays.hpp>
#include <stoke/storage/byte_store.hpp>

namespace stoke {
namespace detail {

/// The array `array` of the `.npz` object `key` of `store`, whose bytes are `bytes` (kept alive
/// by `owner`), its shard named `key / member`. Parsed as `NpzFile::load` parses a file, and
/// checked whole: a stored member is viewed in place in the bytes, its CRC-32 checked too (the
/// object is in memory already); a deflated one is inflated and checked.
inline ArrayShard stored_npz_array(std::span<const std::byte> bytes,
                                   std::shared_ptr<const void> owner,
                                   const storage::ByteStore& store, const std::string& key,
                                   const std::string& array) {
  const NpzArchive npz = open_npz(bytes, std::move(owner), "npz object " + store.describe(key));
  const ZipEntry& found = npz_entry(npz, array);
  return npz_load(npz, found, std::filesystem::path(key) / found.name, /*check_crc=*/true);
}

}  // namespace detail

/// The manifests of the arrays `arrays` (each the member `<array>.npy`, or `<array>` itself) of
/// the `.npz` objects `keys` of `store`, one a array, in this order (for writing them once; a
/// dataset opened with one then reads nothing at open). Each object is read whole once and
/// each array checked as `stored_npz_format` checks it (inflated, CRC-32 included). Throws
/// `InputError` naming the object's URL when one is not a valid archive, lacks an array, or
/// holds another type or row shape than the first.
inline std::vector<ArrayManifest> make_npz_manifests(const storage::ByteStore& store,
                                                     const std::vector<std::string>& keys,
                                                     const std::vector<std::string>& arrays) {
  return detail::make_array_manifests(
      store, keys, "npz", arrays.size(),
      [&](std::span<const std::byte> bytes, const std::string& key) {
        std::vector<ArrayInfo> infos;
        for (const std::string& array : arrays) {
          infos.push_back(detail::stored_npz_array(bytes, nullptr, store, key, array).info());
        }
        return infos;
      });
}

/// The manifest of the array `array` of the `.npz` objects `keys` of `store` (see
/// `make_npz_manifests`).
inline ArrayManifest make_npz_manifest(const storage::ByteStore& store,
                                       const std::vector<std::string>& keys,
                                       const std::string& array) {
  return make_npz_manifests(store, keys, {array}).front();
}

/// How `ShardedArrays` reads the array `array` of the `.npz` shards of `manifest` (from
/// `make_npz_manifest`) from `store` (construct it with `manifest.keys()`), as
/// `stored_npy_format` reads `.npy` shards: opening reads nothing; each object is read whole
/// through the store when the cache needs it, on the cache's I/O threads and ahead of the
/// epoch's order, and checked before a row of it is used: its size against the manifest, the
/// archive as `NpzFile` checks a file (a stored member is viewed in place in the fetched bytes
/// whatever its alignment, and its CRC-32 checked; a deflated one inflated and its CRC-32
/// checked), then the array's type and shape against the manifest. A damaged object is an
/// `InputError` naming its URL; a failed transfer is the store's `DataError`, naming the shard.
inline ArrayFileFormat stored_npz_format(std::shared_ptr<const storage::ByteStore> store,
                                         const ArrayManifest& manifest, std::string array) {
  auto read = [store, array = std::move(array)](std::shared_ptr<const std::vector<std::byte>> bytes,
                                                const std::filesystem::path& path) {
    const std::span<const std::byte> view(*bytes);
    return detail::stored_npz_array(view, std::move(bytes), *store, path.generic_string(), array);
  };
  return detail::stored_array_format(std::move(store), manifest, "npz", std::move(read));
}

}  // namespace stoke

#pragma once
/// @file
/// `ObjectInfo` (a key with its size and ETag, what a listing or a stat returns) and
/// `FetchContext` (the shard, epoch and step a read is for, named by its errors).

#include <cstddef>
#include <cstdint>
#include <string>

namespace stoke::storage {

/// One object of a byte store: its key, its size in bytes and, where the store has one, its
/// ETag (the quotes of the HTTP header removed; empty for local files).
struct ObjectInfo {
  std::string key{};       ///< the key inside the store ("train/shard-0003.tar")
  std::uint64_t size = 0;  ///< bytes
  std::string etag{};      ///< the store's entity tag, or empty

  /// Objects are equal when key, size and ETag are.
  friend bool operator==(const ObjectInfo&, const ObjectInfo&) = default;
};

/// What a read is for, so that a failed transfer can say so: the shard, and where the caller
/// knows them, the epoch and the step that wait for it (`DataError`'s context).
struct FetchContext {
  std::size_t shard = 0;  ///< the shard being read (its index in the dataset)
  std::size_t epoch = 0;  ///< the epoch that reads it
  std::size_t step = 0;   ///< the step that waits for it
};

}  // namespace stoke::storage

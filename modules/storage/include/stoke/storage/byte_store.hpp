#pragma once
/// @file
/// `ByteStore`: where shards live (a folder, an HTTP server, an S3 bucket), seen as keys of
/// bytes that can be listed, read whole and read by range.

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <stoke/storage/object_info.hpp>

namespace stoke::storage {

/// A store of objects named by keys: what every shard format reads through, whatever the
/// scheme. A store is shared by the threads of a loader.
///
/// Requirements of an implementation:
/// 1. Every member may be called from several threads at once.
/// 2. `list(prefix)` returns every object whose key starts with `prefix`, sorted by key.
/// 3. `read(key)` returns the object's bytes, all of them; `read_range(key, offset, length)`
///    returns bytes `[offset, offset + length)`; a range past the end throws, naming the
///    object and the offset.
/// 4. `stat(key)` returns the object's size (and ETag) without reading it.
/// 5. A missing object is an `InputError` naming it; a transfer that fails after its retries is a
///    `DataError` naming the address (without credentials) and the `FetchContext`.
/// 6. `describe(key)` names the object for messages (a path or a URL without credentials).
class ByteStore {
 public:
  virtual ~ByteStore() = default;

  /// The objects whose keys start with `prefix` (all of them for ""), sorted by key.
  [[nodiscard]] virtual std::vector<ObjectInfo> list(std::string_view prefix) const = 0;

  /// The size and ETag of `key`.
  [[nodiscard]] virtual ObjectInfo stat(std::string_view key) const = 0;

  /// The object as messages name it: a path, or a URL without credentials.
  [[nodiscard]] virtual std::string describe(std::string_view key) const = 0;

  /// Tells the store, when a reader opens, the objects it will read and how many it reads
  /// ahead of the one it uses (`depth`). A caching store refuses (`UsageError`) a bound
  /// too small for them, naming the size needed; others ignore it. `what` names the reader.
  virtual void prepare_reads(std::span<const ObjectInfo> objects, std::size_t depth,
                             std::string_view what) const {
    (void)objects, (void)depth, (void)what;
  }

  /// Tells the store the order the reader's next epoch reads `keys` in, so that a caching
  /// store keeps the ones it reads next and evicts the one needed last. Others ignore it.
  virtual void plan_reads(std::span<const std::string> keys) const { (void)keys; }

  /// Every byte of `key`, read for `context`.
  [[nodiscard]] std::vector<std::byte> read(std::string_view key,
                                            const FetchContext& context = {}) const {
    return read_object(key, context);
  }

  /// The bytes `[offset, offset + length)` of `key`, read for `context`.
  [[nodiscard]] std::vector<std::byte> read_range(std::string_view key, std::uint64_t offset,
                                                  std::uint64_t length,
                                                  const FetchContext& context = {}) const {
    return read_object_range(key, offset, length, context);
  }

 protected:
  /// `read`: by default the range of the whole object that `stat` sizes.
  [[nodiscard]] virtual std::vector<std::byte> read_object(std::string_view key,
                                                           const FetchContext& context) const {
    return read_object_range(key, 0, stat(key).size, context);
  }

  /// `read_range`.
  [[nodiscard]] virtual std::vector<std::byte> read_object_range(
      std::string_view key, std::uint64_t offset, std::uint64_t length,
      const FetchContext& context) const = 0;
};

}  // namespace stoke::storage

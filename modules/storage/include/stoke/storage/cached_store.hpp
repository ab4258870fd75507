#pragma once
/// @file
/// `CachedStore`: a byte store read through a `NodeCache`, so that the processes of a node
/// fetch each object once, within the cache's byte bound.

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>
#include <stoke/core/error.hpp>
#include <stoke/storage/byte_store.hpp>
#include <stoke/storage/local_store.hpp>
#include <stoke/storage/node_cache.hpp>

namespace stoke::storage {

/// `inner` (a remote store) read through the node cache `cache`:
/// - `read` of an object comes from the cache, fetched from `inner` once per node;
/// - `list` is cached too (as a JSON object in the cache), so a listing is fetched once per
///   node (and not listed again while it is cached); `stat` and `read_range` (headers, small
///   parts) go to `inner`;
/// - `prepare_reads` refuses a bound below what the reader's read-ahead depth needs, and
/// `plan_reads`
///   publishes the reader's order to the cache, which evicts by it;
/// - over a `LocalStore` nothing is copied or cached: every read goes to the files, and the
///   cache never deletes a file of the source.
class CachedStore final : public ByteStore {
 public:
  /// `inner` through `cache` (shared by every reader of this process that uses the folder).
  CachedStore(std::shared_ptr<const ByteStore> inner, std::shared_ptr<NodeCache> cache)
      : inner_(std::move(inner)), cache_(std::move(cache)) {
    if (!inner_ || !cache_) throw UsageError("stoke: a CachedStore needs a store and a cache");
    local_ = dynamic_cast<const LocalStore*>(inner_.get()) != nullptr;
  }

  /// The cache it reads through.
  [[nodiscard]] NodeCache& cache() const noexcept { return *cache_; }

  std::vector<ObjectInfo> list(std::string_view prefix) const override {
    if (local_) return inner_->list(prefix);
    const std::vector<std::byte> bytes = cache_->get(
        "list:" + inner_->describe(prefix), [&] { return listing_bytes(inner_->list(prefix)); });
    const auto text = std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size());
    std::vector<ObjectInfo> objects;
    try {
      for (const auto& object : nlohmann::json::parse(text)) {
        objects.push_back({object.at(0).get<std::string>(), object.at(1).get<std::uint64_t>(),
                           object.at(2).get<std::string>()});
      }
    } catch (const nlohmann::json::exception& error) {
      throw InputError("stoke: the cached listing of " + inner_->describe(prefix) + " in '" +
                       cache_->options().folder.string() + "' is unreadable: " + error.what());
    }
    return objects;
  }

  ObjectInfo stat(std::string_view key) const override { return inner_->stat(key); }

  std::string describe(std::string_view key) const override { return inner_->describe(key); }

  void prepare_reads(std::span<const ObjectInfo> objects, std::size_t depth,
                     std::string_view what) const override {
    if (local_) return;
    std::vector<std::uint64_t> sizes;
    for (const ObjectInfo& object : objects) sizes.push_back(object.size);
    cache_->require(sizes, depth, what);
    depth_ = depth;
  }

  void plan_reads(std::span<const std::string> keys) const override {
    if (local_) return;
    std::vector<std::string> names;
    for (const std::string& key : keys) names.push_back(inner_->describe(key));
    cache_->plan(names, depth_);
  }

 protected:
  std::vector<std::byte> read_object(std::string_view key,
                                     const FetchContext& context) const override {
    if (local_) return inner_->read(key, context);
    return cache_->get(inner_->describe(key), [&] { return inner_->read(key, context); });
  }

  std::vector<std::byte> read_object_range(std::string_view key, std::uint64_t offset,
                                           std::uint64_t length,
                                           const FetchContext& context) const override {
    return inner_->read_range(key, offset, length, context);
  }

 private:
  /// A listing as the cache keeps it: `[[key, size, etag], ...]`.
  static std::vector<std::byte> listing_bytes(const std::vector<ObjectInfo>& objects) {
    nlohmann::json json = nlohmann::json::array();
    for (const ObjectInfo& object : objects) json.push_back({object.key, object.size, object.etag});
    const std::string text = json.dump();
    const auto* data = reinterpret_cast<const std::byte*>(text.data());
    return {data, data + text.size()};
  }

  std::shared_ptr<const ByteStore> inner_;
  std::shared_ptr<NodeCache> cache_;
  bool local_ = false;
  mutable std::atomic<std::size_t> depth_{
      0};  ///< the reader's read-ahead depth, from `prepare_reads`
};

}  // namespace stoke::storage

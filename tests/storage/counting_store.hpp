#pragma once
// A byte store that counts the calls that reach the store it forwards to: what the stored-shard
// tests check "opening reads nothing" with.
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <stoke/storage/byte_store.hpp>

namespace stoke_storage_test {

/// A store that counts the reads of the store it forwards to.
class CountingStore final : public stoke::storage::ByteStore {
 public:
  explicit CountingStore(std::shared_ptr<const ByteStore> inner) : inner_(std::move(inner)) {}
  std::vector<stoke::storage::ObjectInfo> list(std::string_view prefix) const override {
    ++reads;
    return inner_->list(prefix);
  }
  stoke::storage::ObjectInfo stat(std::string_view key) const override {
    ++reads;
    return inner_->stat(key);
  }
  std::string describe(std::string_view key) const override { return inner_->describe(key); }
  mutable std::atomic<std::size_t> reads{0};  ///< calls that reached the inner store

 protected:
  std::vector<std::byte> read_object(std::string_view key,
                                     const stoke::storage::FetchContext& context) const override {
    ++reads;
    return inner_->read(key, context);
  }
  std::vector<std::byte> read_object_range(
      std::string_view key, std::uint64_t offset, std::uint64_t length,
      const stoke::storage::FetchContext& context) const override {
    ++reads;
    return inner_->read_range(key, offset, length, context);
  }

 private:
  std::shared_ptr<const ByteStore> inner_;
};

}  // namespace stoke_storage_test

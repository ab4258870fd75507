#pragma once
/// @file
/// `TimedStore`: a byte store that passes every call to another and notes when each read began
/// and ended, for the benchmarks' timelines (what the read-ahead fetched while the consumer
/// waited or worked).

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <stoke/storage/byte_store.hpp>

namespace stoke_bench {

/// One read through a `TimedStore`: the object, its bytes, and when it began and ended, in
/// milliseconds from the store's start.
struct TimedRead {
  std::string key;
  std::uint64_t bytes = 0;
  double begin_ms = 0;
  double end_ms = 0;
};

/// A `ByteStore` over `inner` that notes every `read` and `read_range` (see `TimedRead`); the
/// other calls pass through untouched. Its clock starts when it is made.
class TimedStore final : public stoke::storage::ByteStore {
 public:
  using Clock = std::chrono::steady_clock;

  /// Times the reads of `inner` from now on.
  explicit TimedStore(std::shared_ptr<const stoke::storage::ByteStore> inner)
      : inner_(std::move(inner)), start_(Clock::now()) {}

  /// When the clock started.
  [[nodiscard]] Clock::time_point start() const noexcept { return start_; }
  /// Milliseconds from the start to `at`.
  [[nodiscard]] double ms(Clock::time_point at) const noexcept {
    return std::chrono::duration<double, std::milli>(at - start_).count();
  }

  /// The reads so far, in the order they ended.
  [[nodiscard]] std::vector<TimedRead> reads() const {
    const std::lock_guard lock(mutex_);
    return reads_;
  }

  [[nodiscard]] std::vector<stoke::storage::ObjectInfo> list(
      std::string_view prefix) const override {
    return inner_->list(prefix);
  }
  [[nodiscard]] stoke::storage::ObjectInfo stat(std::string_view key) const override {
    return inner_->stat(key);
  }
  [[nodiscard]] std::string describe(std::string_view key) const override {
    return inner_->describe(key);
  }
  void prepare_reads(std::span<const stoke::storage::ObjectInfo> objects, std::size_t depth,
                     std::string_view what) const override {
    inner_->prepare_reads(objects, depth, what);
  }
  void plan_reads(std::span<const std::string> keys) const override { inner_->plan_reads(keys); }

 protected:
  [[nodiscard]] std::vector<std::byte> read_object(
      std::string_view key, const stoke::storage::FetchContext& context) const override {
    return timed(key, [&] { return inner_->read(key, context); });
  }
  [[nodiscard]] std::vector<std::byte> read_object_range(
      std::string_view key, std::uint64_t offset, std::uint64_t length,
      const stoke::storage::FetchContext& context) const override {
    return timed(key, [&] { return inner_->read_range(key, offset, length, context); });
  }

 private:
  /// Runs `read` and notes it.
  template <class Read>
  std::vector<std::byte> timed(std::string_view key, Read&& read) const {
    const double begin = ms(Clock::now());
    std::vector<std::byte> bytes = read();
    const double end = ms(Clock::now());
    const std::lock_guard lock(mutex_);
    reads_.push_back({std::string(key), bytes.size(), begin, end});
    return bytes;
  }

  std::shared_ptr<const stoke::storage::ByteStore> inner_;
  Clock::time_point start_;
  mutable std::mutex mutex_;
  mutable std::vector<TimedRead> reads_;
};

}  // namespace stoke_bench

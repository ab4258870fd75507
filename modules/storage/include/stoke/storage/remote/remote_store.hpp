#pragma once
/// @file
/// `RemoteStore`: what the HTTP(S) and S3 stores share: their I/O threads, `stat` by HEAD, and
/// reads fetched as parallel ranged GETs, each part retried and resumed on its own.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include <stoke/core/error.hpp>
#include <stoke/storage/byte_store.hpp>
#include <stoke/storage/remote/detail/io_pool.hpp>
#include <stoke/storage/remote/detail/ranged_get.hpp>
#include <stoke/storage/remote/detail/retried_request.hpp>
#include <stoke/storage/remote/transfer_options.hpp>

namespace stoke::storage {

/// A byte store over HTTP: a read of `n` bytes is `ceil(n / part_size)` ranged GETs run
/// `concurrency` at a time on the store's I/O threads (each thread keeps one libcurl handle and
/// its connections), every part checked and retried on its own (see `TransferOptions`). A
/// whole-object `read` first sizes the object (HEAD) and then checks that every part comes from
/// the same version of it (its ETag). Subclasses say how a key becomes a request.
class RemoteStore : public ByteStore {
 public:
  /// A store transferring with `options`.
  explicit RemoteStore(TransferOptions options)
      : options_(checked(options)), pool_(std::make_unique<detail::IoPool>(options_.concurrency)) {}

  /// How this store transfers.
  [[nodiscard]] const TransferOptions& options() const noexcept { return options_; }

  ObjectInfo stat(std::string_view key) const override { return stat_for(key, {}); }

  std::string describe(std::string_view key) const override { return remote_object(key).shown; }

 protected:
  /// The request that reads `key` (a GET of its URL, signed where the store signs) and the URL
  /// messages show.
  [[nodiscard]] virtual detail::RemoteObject remote_object(std::string_view key) const = 0;

  /// Runs `work(handle, random)` on one of the I/O threads and waits for it.
  template <class Work>
  void run_on_io_thread(Work&& work) const {
    pool_->run_all(1, [&](std::size_t, detail::CurlEasy& easy) { work(easy, thread_random()); });
  }

  std::vector<std::byte> read_object(std::string_view key,
                                     const FetchContext& context) const override {
    const ObjectInfo info = stat_for(key, context);
    detail::RemoteObject object = remote_object(key);
    object.etag = info.etag;
    return fetch(object, 0, info.size, context);
  }

  std::vector<std::byte> read_object_range(std::string_view key, std::uint64_t offset,
                                           std::uint64_t length,
                                           const FetchContext& context) const override {
    return fetch(remote_object(key), offset, length, context);
  }

 private:
  /// `stat` by a HEAD, whose failure names `context`.
  ObjectInfo stat_for(std::string_view key, const FetchContext& context) const {
    detail::RemoteObject object = remote_object(key);
    object.request.method = "HEAD";
    detail::CurlResponse response;
    run_on_io_thread([&](detail::CurlEasy& easy, std::mt19937_64& random) {
      response = detail::retried_request(easy, object, options_, context, random);
    });
    const std::string length = response.header("content-length");
    if (length.empty() || length.find_first_not_of("0123456789") != std::string::npos) {
      throw InputError("stoke: " + object.shown + " has no Content-Length (HEAD gave '" + length +
                       "')");
    }
    return {std::string(key), std::stoull(length), detail::bare_etag(response.header("etag"))};
  }

  static TransferOptions checked(TransferOptions options) {
    if (options.part_size == 0 || options.concurrency == 0) {
      throw UsageError("stoke: TransferOptions needs a part_size and a concurrency above 0");
    }
    return options;
  }

  /// A generator per I/O thread, for the backoff's jitter.
  static std::mt19937_64& thread_random() {
    thread_local std::mt19937_64 random{std::random_device{}()};
    return random;
  }

  std::vector<std::byte> fetch(const detail::RemoteObject& object, std::uint64_t offset,
                               std::uint64_t length, const FetchContext& context) const {
    std::vector<std::byte> bytes(static_cast<std::size_t>(length));
    const std::uint64_t parts = (length + options_.part_size - 1) / options_.part_size;
    pool_->run_all(parts, [&](std::size_t part, detail::CurlEasy& easy) {
      const std::uint64_t begin = part * options_.part_size;
      const std::uint64_t size = std::min(options_.part_size, length - begin);
      detail::get_range(
          easy, object, offset + begin,
          std::span(bytes).subspan(static_cast<std::size_t>(begin), static_cast<std::size_t>(size)),
          options_, context, thread_random());
    });
    return bytes;
  }

  TransferOptions options_;
  std::unique_ptr<detail::IoPool> pool_;
};

}  // namespace stoke::storage

#pragma once
/// @file
/// `LocalStore`: the files under a folder as a `ByteStore` (no new dependency).

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include <stoke/core/error.hpp>
#include <stoke/core/read_file.hpp>
#include <stoke/storage/byte_store.hpp>

namespace stoke::storage {

/// The regular files under `root`, keyed by their path relative to it with `/` separators
/// (`train/a.npy`). Reads use `pread`, so a file that shrinks under a read is an `InputError`,
/// never a crash. Listing walks the folder (symbolic links to files are followed).
class LocalStore final : public ByteStore {
 public:
  /// The files under `root` (a folder; "/" for absolute paths as keys).
  explicit LocalStore(std::filesystem::path root) : root_(std::move(root)) {}

  /// The folder the keys are relative to.
  [[nodiscard]] const std::filesystem::path& root() const noexcept { return root_; }

  std::vector<ObjectInfo> list(std::string_view prefix) const override {
    // Walk only the deepest folder the prefix names entirely.
    const std::string_view folder = prefix.substr(0, prefix.rfind('/') + 1);
    const std::filesystem::path start = root_ / std::string(folder);
    std::vector<ObjectInfo> objects;
    std::error_code error;
    if (!std::filesystem::is_directory(start, error)) return objects;
    std::filesystem::recursive_directory_iterator it(start, error), end;
    if (error) fail_listing(start, error);
    for (; it != end; it.increment(error)) {
      if (error) fail_listing(start, error);
      if (!it->is_regular_file(error)) continue;
      std::string key = it->path().lexically_relative(root_).generic_string();
      if (key.starts_with(prefix)) {
        objects.push_back({std::move(key), static_cast<std::uint64_t>(it->file_size()), ""});
      }
    }
    std::ranges::sort(objects, {}, &ObjectInfo::key);
    return objects;
  }

  ObjectInfo stat(std::string_view key) const override {
    const std::filesystem::path path = path_of(key);
    std::error_code error;
    const auto size = std::filesystem::file_size(path, error);
    if (error) {
      throw InputError("stoke: cannot stat '" + path.string() + "': " + error.message());
    }
    return {std::string(key), static_cast<std::uint64_t>(size), ""};
  }

  std::string describe(std::string_view key) const override { return path_of(key).string(); }

 protected:
  std::vector<std::byte> read_object(std::string_view key, const FetchContext&) const override {
    return read_whole_file<std::byte>(path_of(key), "stored");
  }

  std::vector<std::byte> read_object_range(std::string_view key, std::uint64_t offset,
                                           std::uint64_t length,
                                           const FetchContext&) const override {
    const std::filesystem::path path = path_of(key);
    const auto fail = [&](std::uint64_t at, const std::string& reason) {
      throw InputError("stoke: cannot read '" + path.string() + "' at offset " +
                       std::to_string(at) + ": " + reason);
    };
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) fail(offset, std::generic_category().message(errno));
    struct FdCloser {
      int fd;
      ~FdCloser() { ::close(fd); }
    } closer{fd};
    std::vector<std::byte> bytes(static_cast<std::size_t>(length));
    std::uint64_t filled = 0;
    while (filled < length) {
      const ::ssize_t got = ::pread(fd, bytes.data() + filled, length - filled,
                                    static_cast<::off_t>(offset + filled));
      if (got < 0 && errno == EINTR) continue;
      if (got < 0) fail(offset + filled, std::generic_category().message(errno));
      if (got == 0) {
        fail(offset + filled, "the file ends before the " + std::to_string(length) +
                                  " bytes asked from offset " + std::to_string(offset));
      }
      filled += static_cast<std::uint64_t>(got);
    }
    return bytes;
  }

 private:
  std::filesystem::path path_of(std::string_view key) const { return root_ / std::string(key); }

  [[noreturn]] static void fail_listing(const std::filesystem::path& folder,
                                        const std::error_code& error) {
    throw InputError("stoke: cannot list '" + folder.string() + "': " + error.message());
  }

  std::filesystem::path root_;
};

}  // namespace stoke::storage

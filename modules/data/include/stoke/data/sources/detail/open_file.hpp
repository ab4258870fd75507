#pragma once
/// @file
/// `OpenFile`: a regular file open for reading (POSIX), its size when it was opened, and reads
/// at a byte offset (`pread`) that refuse a file which ends early with an `InputError`
/// naming the file and the offset. What `FileMapping` maps and `FileAccess::read` reads.

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <limits>
#include <span>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>

#include <stoke/core/error.hpp>

namespace stoke::detail {

/// The path in quotes, for error messages.
inline std::string quoted_path(const std::filesystem::path& path) {
  return "'" + path.string() + "'";
}

/// A regular file open read-only; closed when destroyed. Several threads may `read_at` at once.
class OpenFile {
 public:
  /// Opens `path` to `purpose` it (`"map"`, `"read"`: a verb for the messages). Throws
  /// `InputError` naming the path and the reason when it cannot be opened or examined, is not
  /// a regular file, or is larger than the address space.
  OpenFile(std::filesystem::path path, std::string_view purpose) : path_(std::move(path)) {
    fd_ = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd_ < 0) fail("cannot open", errno);
    try {
      struct stat info{};
      if (::fstat(fd_, &info) != 0) fail("cannot stat", errno);
      const std::string cannot = "stoke: cannot " + std::string(purpose) + " " + quoted_path(path_);
      if (!S_ISREG(info.st_mode)) throw InputError(cannot + ": not a regular file");
      const auto file_size = static_cast<std::uintmax_t>(info.st_size);
      if (file_size > std::numeric_limits<std::size_t>::max()) {
        throw InputError(cannot + ": its " + std::to_string(file_size) +
                         " bytes exceed the address space");
      }
      size_ = static_cast<std::size_t>(file_size);
    } catch (...) {
      ::close(fd_);
      throw;
    }
  }

  OpenFile(const OpenFile&) = delete;
  OpenFile& operator=(const OpenFile&) = delete;

  ~OpenFile() { ::close(fd_); }

  /// The file.
  [[nodiscard]] const std::filesystem::path& path() const noexcept { return path_; }

  /// Its descriptor.
  [[nodiscard]] int descriptor() const noexcept { return fd_; }

  /// Its size in bytes when it was opened.
  [[nodiscard]] std::size_t size() const noexcept { return size_; }

  /// Reads `out.size()` bytes from byte `offset` into `out`. Throws `InputError` naming the
  /// file and the byte offset when the read fails, or when the file ends before `offset +
  /// out.size()` (a short read: the file shrank after it was opened), then also naming the
  /// size it has now and the size it had.
  void read_at(std::size_t offset, std::span<std::byte> out) const {
    std::size_t done = 0;
    while (done < out.size()) {
      const ::ssize_t got =
          ::pread(fd_, out.data() + done, out.size() - done, static_cast<::off_t>(offset + done));
      if (got < 0 && errno == EINTR) continue;
      if (got < 0) {
        const int error = errno;
        throw InputError("stoke: cannot read " + quoted_path(path_) + " at byte offset " +
                         std::to_string(offset + done) + ": " +
                         std::generic_category().message(error));
      }
      if (got == 0) short_read(offset, out.size(), done);
      done += static_cast<std::size_t>(got);
    }
  }

 private:
  [[noreturn]] void fail(const std::string& what, int error) const {
    throw InputError("stoke: " + what + " " + quoted_path(path_) + ": " +
                     std::generic_category().message(error));
  }

  [[noreturn]] void short_read(std::size_t offset, std::size_t wanted, std::size_t got) const {
    struct stat info{};
    const std::string now = ::fstat(fd_, &info) == 0
                                ? "it now ends at byte offset " + std::to_string(info.st_size)
                                : "it now ends earlier";
    throw InputError("stoke: short read of " + quoted_path(path_) + " at byte offset " +
                     std::to_string(offset) + ": " + std::to_string(wanted) + " bytes wanted, " +
                     std::to_string(got) + " read; " + now + ", it held " + std::to_string(size_) +
                     " bytes when opened (the file changed underneath)");
  }

  std::filesystem::path path_;
  int fd_ = -1;
  std::size_t size_ = 0;
};

}  // namespace stoke::detail

#pragma once
/// @file
/// `write_file_atomically` and `AtomicFileWriter`: replace a file so that a crash leaves either
/// the old or the new content, never a mix (write a temporary, fsync, rename over, fsync the
/// directory). POSIX.

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>

#include <stoke/core/error.hpp>

namespace stoke {

/// Test hooks of `write_file_atomically`: a hook that throws simulates a crash at that point.
struct AtomicWriteHooks {
  /// Called after the temporary file is written, synced and closed, before the rename.
  std::function<void()> before_rename;
};

namespace detail {

/// Distinguishes the temporary files of one process.
inline std::atomic<std::uint64_t> atomic_write_counter{0};

/// Throws `stoke::Error` for a failed system call on `path`, with the system's reason.
[[noreturn]] inline void throw_file_error(const std::string& action,
                                          const std::filesystem::path& path, int error) {
  throw Error("stoke: cannot " + action + " '" + path.string() +
              "': " + std::generic_category().message(error));
}

/// Writes all of `bytes` to `fd`, looping on partial writes and `EINTR`.
inline void write_all(int fd, std::span<const std::byte> bytes, const std::filesystem::path& path) {
  while (!bytes.empty()) {
    const ::ssize_t written = ::write(fd, bytes.data(), bytes.size());
    if (written < 0) {
      if (errno == EINTR) continue;
      throw_file_error("write " + std::to_string(bytes.size()) + " bytes to", path, errno);
    }
    bytes = bytes.subspan(static_cast<std::size_t>(written));
  }
}

/// `fsync(fd)`, retried on `EINTR`.
inline int fsync_retrying(int fd) {
  int result = 0;
  do {
    result = ::fsync(fd);
  } while (result != 0 && errno == EINTR);
  return result;
}

/// Opens the directory `directory` and syncs it, so that a rename inside it is durable.
inline void fsync_directory(const std::filesystem::path& directory) {
  const int fd = ::open(directory.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) throw_file_error("open directory", directory, errno);
  const int result = fsync_retrying(fd);
  const int error = errno;
  ::close(fd);
  if (result != 0) throw_file_error("fsync directory", directory, error);
}

}  // namespace detail

/// A file written in pieces and put in place atomically: the bytes go to a temporary file in
/// the same directory (`<name>.tmp.<pid>.<counter>`); `commit` fsyncs it, renames it over
/// `path` and fsyncs the directory. A reader, or a crash at any point, sees the old content or
/// the new one, never a mix; a writer dropped before `commit` removes its temporary file. For
/// files too large to hold in memory (a token store's `.bin`). Throws `stoke::Error` naming the
/// path and the system's reason on any failure.
class AtomicFileWriter {
 public:
  /// Creates the temporary file for `path`.
  explicit AtomicFileWriter(std::filesystem::path path) : path_(std::move(path)) {
    if (path_.filename().empty()) {
      throw Error("stoke: cannot write '" + path_.string() + "': the path names no file");
    }
    temporary_ = path_;
    temporary_ += ".tmp." + std::to_string(::getpid()) + "." +
                  std::to_string(detail::atomic_write_counter.fetch_add(1));
    fd_ = ::open(temporary_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd_ < 0) detail::throw_file_error("create temporary file", temporary_, errno);
  }
  AtomicFileWriter(const AtomicFileWriter&) = delete;
  AtomicFileWriter& operator=(const AtomicFileWriter&) = delete;

  /// Closes and removes the temporary file unless `commit` put it in place.
  ~AtomicFileWriter() {
    if (fd_ >= 0) ::close(fd_);
    if (!committed_) ::unlink(temporary_.c_str());
  }

  /// The file it replaces.
  [[nodiscard]] const std::filesystem::path& path() const noexcept { return path_; }

  /// Appends `bytes` to the temporary file.
  void write(std::span<const std::byte> bytes) {
    if (fd_ < 0) throw Error("stoke: '" + path_.string() + "' is committed: nothing more to write");
    detail::write_all(fd_, bytes, temporary_);
  }

  /// Fsyncs and closes the temporary file, then (after `hooks.before_rename`) renames it over
  /// `path()` and fsyncs the directory. Call once.
  void commit(const AtomicWriteHooks& hooks = {}) {
    if (fd_ < 0) throw Error("stoke: '" + path_.string() + "' is committed already");
    if (detail::fsync_retrying(fd_) != 0) detail::throw_file_error("fsync", temporary_, errno);
    const int closed = ::close(std::exchange(fd_, -1));
    if (closed != 0) detail::throw_file_error("close", temporary_, errno);
    if (hooks.before_rename) hooks.before_rename();
    if (::rename(temporary_.c_str(), path_.c_str()) != 0) {
      const int error = errno;
      throw Error("stoke: cannot rename '" + temporary_.string() + "' over '" + path_.string() +
                  "': " + std::generic_category().message(error));
    }
    committed_ = true;
    detail::fsync_directory(path_.parent_path().empty() ? std::filesystem::path(".")
                                                        : path_.parent_path());
  }

 private:
  std::filesystem::path path_;
  std::filesystem::path temporary_;
  int fd_ = -1;
  bool committed_ = false;
};

/// Replaces the file at `path` by `bytes`, atomically (see `AtomicFileWriter`): a reader, or a
/// crash at any point, sees the old content or the new one, never a mix. Throws `stoke::Error`
/// naming the path and the system's reason on any failure, after removing the temporary file.
/// `hooks` are for tests.
inline void write_file_atomically(const std::filesystem::path& path,
                                  std::span<const std::byte> bytes,
                                  const AtomicWriteHooks& hooks = {}) {
  AtomicFileWriter file(path);
  file.write(bytes);
  file.commit(hooks);
}

/// `write_file_atomically` for text (or any bytes held in a string).
inline void write_file_atomically(const std::filesystem::path& path, std::string_view text,
                                  const AtomicWriteHooks& hooks = {}) {
  write_file_atomically(path, std::as_bytes(std::span<const char>(text.data(), text.size())),
                        hooks);
}

}  // namespace stoke

#pragma once
/// @file
/// `write_file_atomically`: replace a file so that a crash leaves either the old or the new
/// content, never a mix (write a temporary, fsync, rename over, fsync the directory). POSIX.

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

/// Replaces the file at `path` by `bytes`, atomically: the bytes go to a temporary file in the
/// same directory (`<name>.tmp.<pid>.<counter>`), which is fsynced and renamed over `path`;
/// then the directory is fsynced. A reader, or a crash at any point, sees the old content or
/// the new one, never a mix. Throws `stoke::Error` naming the path and the system's reason on
/// any failure, after removing the temporary file. `hooks` are for tests.
inline void write_file_atomically(const std::filesystem::path& path,
                                  std::span<const std::byte> bytes,
                                  const AtomicWriteHooks& hooks = {}) {
  if (path.filename().empty()) {
    throw Error("stoke: cannot write '" + path.string() + "': the path names no file");
  }
  const std::filesystem::path directory =
      path.parent_path().empty() ? std::filesystem::path(".") : path.parent_path();
  std::filesystem::path temporary = path;
  temporary += ".tmp." + std::to_string(::getpid()) + "." +
               std::to_string(detail::atomic_write_counter.fetch_add(1));

  int fd = ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
  if (fd < 0) detail::throw_file_error("create temporary file", temporary, errno);
  // Until the rename succeeds, leaving this scope closes and removes the temporary.
  struct Cleanup {
    int& fd;
    const std::filesystem::path& temporary;
    bool renamed = false;
    ~Cleanup() {
      if (fd >= 0) ::close(fd);
      if (!renamed) ::unlink(temporary.c_str());
    }
  } cleanup{fd, temporary};

  detail::write_all(fd, bytes, temporary);
  if (detail::fsync_retrying(fd) != 0) detail::throw_file_error("fsync", temporary, errno);
  const int closed = ::close(fd);
  fd = -1;
  if (closed != 0) detail::throw_file_error("close", temporary, errno);
  if (hooks.before_rename) hooks.before_rename();
  if (::rename(temporary.c_str(), path.c_str()) != 0) {
    const int error = errno;
    throw Error("stoke: cannot rename '" + temporary.string() + "' over '" + path.string() +
                "': " + std::generic_category().message(error));
  }
  cleanup.renamed = true;
  detail::fsync_directory(directory);
}

/// `write_file_atomically` for text (or any bytes held in a string).
inline void write_file_atomically(const std::filesystem::path& path, std::string_view text,
                                  const AtomicWriteHooks& hooks = {}) {
  write_file_atomically(path, std::as_bytes(std::span<const char>(text.data(), text.size())),
                        hooks);
}

}  // namespace stoke

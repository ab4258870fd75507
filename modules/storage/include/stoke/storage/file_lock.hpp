#pragma once
/// @file
/// `FileLock`: an exclusive `flock` on a file, which the kernel releases when the process that
/// holds it dies (even by SIGKILL), so that what it guards never stays locked by the dead.

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <string>
#include <system_error>
#include <utility>

#include <stoke/core/error.hpp>

namespace stoke::storage {

/// An exclusive `flock` on `path` (created if missing), held from construction (`lock`) or from
/// a successful `try_lock` until destruction. Each `FileLock` opens the file anew, so two of
/// them exclude each other in one process as well as between processes.
class FileLock {
 public:
  /// Opens (creates) `path`; locks nothing yet.
  explicit FileLock(std::filesystem::path path) : path_(std::move(path)) {
    fd_ = ::open(path_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0666);
    if (fd_ < 0) fail("open the lock file");
  }
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;
  FileLock(FileLock&& other) noexcept
      : path_(std::move(other.path_)), fd_(std::exchange(other.fd_, -1)) {}
  FileLock& operator=(FileLock&&) = delete;

  /// Closes the file, which releases the lock (in a forked child, which shares the open file
  /// with its parent, closing it leaves the parent's lock held).
  ~FileLock() {
    if (fd_ >= 0) ::close(fd_);
  }

  /// Waits for the lock.
  void lock() {
    while (::flock(fd_, LOCK_EX) != 0) {
      if (errno != EINTR) fail("lock");
    }
  }

  /// Takes the lock if no one holds it; whether it did.
  [[nodiscard]] bool try_lock() {
    if (::flock(fd_, LOCK_EX | LOCK_NB) == 0) return true;
    if (errno == EWOULDBLOCK || errno == EINTR) return false;
    fail("lock");
  }

  /// The file's descriptor (to write beside the lock).
  [[nodiscard]] int fd() const noexcept { return fd_; }

 private:
  [[noreturn]] void fail(const std::string& action) const {
    throw Error("stoke: cannot " + action + " '" + path_.string() +
                "': " + std::generic_category().message(errno));
  }

  std::filesystem::path path_;
  int fd_ = -1;
};

}  // namespace stoke::storage

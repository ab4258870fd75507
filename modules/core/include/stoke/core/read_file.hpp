#pragma once
/// @file
/// Reads a whole file into memory, with errors that name the file and the offset reached.

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <filesystem>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include <stoke/core/error.hpp>

namespace stoke {

/// The whole file at `path` as bytes of type `Byte` (`std::byte` or `std::uint8_t`). Throws
/// `InputError` saying "cannot read <kind> file '<path>' at offset N: <reason>" when it
/// cannot be opened or read, and naming the file when it is not a regular file.
template <class Byte>
std::vector<Byte> read_whole_file(const std::filesystem::path& path, std::string_view kind) {
  const auto fail = [&](std::size_t offset, int error) {
    throw InputError("stoke: cannot read " + std::string(kind) + " file '" + path.string() +
                     "' at offset " + std::to_string(offset) + ": " +
                     std::generic_category().message(error));
  };
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) fail(0, errno);
  struct FdCloser {
    int fd;
    ~FdCloser() { ::close(fd); }
  } closer{fd};
  struct stat info{};
  if (::fstat(fd, &info) != 0) fail(0, errno);
  // A device, pipe or socket may never end (/dev/zero): only regular files are read whole.
  if (!S_ISREG(info.st_mode)) {
    throw InputError("stoke: cannot read " + std::string(kind) + " file '" + path.string() +
                     "': not a regular file (a device, pipe or socket may never end)");
  }
  std::vector<Byte> bytes(static_cast<std::size_t>(std::max<::off_t>(info.st_size, 0)));
  std::size_t filled = 0;
  while (true) {
    if (filled == bytes.size()) bytes.resize(std::max<std::size_t>(4096, bytes.size() * 2));
    const ::ssize_t got = ::read(fd, bytes.data() + filled, bytes.size() - filled);
    if (got < 0) {
      if (errno == EINTR) continue;
      fail(filled, errno);
    }
    if (got == 0) break;
    filled += static_cast<std::size_t>(got);
  }
  bytes.resize(filled);
  return bytes;
}

}  // namespace stoke

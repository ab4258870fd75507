#pragma once
/// @file
/// What the fuzz harnesses share: the input as a file (stoke's readers take paths), and the
/// rule that a reader may refuse an input only with `stoke::InputError`.

#include <fcntl.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <string>

#include <stoke/core/error.hpp>

namespace stoke::fuzz {

/// One scratch file per process, rewritten with each input.
class ScratchFile {
 public:
  ScratchFile() {
    const char* dir = std::getenv("TMPDIR");
    std::string pattern = std::string(dir != nullptr ? dir : "/tmp") + "/stoke-fuzz-XXXXXX";
    fd_ = ::mkstemp(pattern.data());
    if (fd_ < 0) std::abort();
    path_ = pattern;
  }
  ScratchFile(const ScratchFile&) = delete;
  ScratchFile& operator=(const ScratchFile&) = delete;
  ~ScratchFile() {
    ::close(fd_);
    std::filesystem::remove(path_);
  }

  /// The file, holding exactly `size` bytes of `data`.
  const std::filesystem::path& holding(const std::uint8_t* data, std::size_t size) {
    if (::ftruncate(fd_, 0) != 0) std::abort();
    for (std::size_t done = 0; done < size;) {
      const ::ssize_t wrote = ::pwrite(fd_, data + done, size - done, static_cast<off_t>(done));
      if (wrote <= 0) std::abort();
      done += static_cast<std::size_t>(wrote);
    }
    return path_;
  }

 private:
  int fd_ = -1;
  std::filesystem::path path_;
};

/// Runs `read`; an `InputError` is the reader refusing the input, which is fine. Any other
/// exception escapes, and libFuzzer reports it (with the input) as a finding.
template <class Read>
void refuse_only_with_input_error(Read read) {
  try {
    read();
  } catch (const InputError&) {
  }
}

/// The most pixels a fuzzed image is decoded at (4 Mi): larger headers are only read, so that
/// an input stays within libFuzzer's time and memory limits.
inline constexpr std::uint64_t max_decoded_pixels = std::uint64_t{1} << 22;

}  // namespace stoke::fuzz

#pragma once
/// @file
/// `TarWriter`: writes a tar archive (GNU format: ustar headers, GNU long names) member by
/// member, for writing WebDataset shards that `TarShards` reads.

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <span>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

#include <stoke/core/error.hpp>
#include <stoke/images/detail/tar_reader.hpp>

namespace stoke::images {

/// Writes a tar archive: `add` appends a regular file, `finish` writes the end-of-archive
/// blocks and closes the file. Names longer than 100 bytes get a GNU long-name entry (as GNU
/// tar and Python's `tarfile` write them). Members have mode 0644, owner 0 and time 0, so the
/// same members make the same bytes.
///
/// An archive whose writer is destroyed before `finish` lacks the end-of-archive blocks, and
/// `TarShards` refuses it as truncated.
class TarWriter {
 public:
  /// Creates (or truncates) `path`; throws `stoke::Error` naming it when it cannot.
  explicit TarWriter(std::filesystem::path path) : path_(std::move(path)) {
    fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd_ < 0) fail("cannot create", errno);
  }

  TarWriter(const TarWriter&) = delete;
  TarWriter& operator=(const TarWriter&) = delete;

  /// Closes the file (without the end-of-archive blocks unless `finish` wrote them).
  ~TarWriter() {
    if (fd_ >= 0) ::close(fd_);
  }

  /// Appends the regular file `member_name` holding `bytes`. Throws `UsageError` when the name
  /// is empty, holds a NUL byte or exceeds `detail::tar_max_long_name` bytes, or after
  /// `finish`; `stoke::Error` naming the file when the write fails.
  void add(std::string_view member_name, std::span<const std::uint8_t> bytes) {
    if (fd_ < 0) {
      throw UsageError("stoke: TarWriter('" + path_.string() + "'): add after finish");
    }
    if (member_name.empty() || member_name.find('\0') != std::string_view::npos ||
        member_name.size() > detail::tar_max_long_name) {
      throw UsageError("stoke: TarWriter('" + path_.string() + "'): member name of " +
                       std::to_string(member_name.size()) +
                       " bytes: names must be 1 to 65536 bytes without NUL");
    }
    if (member_name.size() > 100) {
      // "././@LongLink", type 'L': the name and its NUL as data, then the member.
      std::vector<std::uint8_t> name(member_name.begin(), member_name.end());
      name.push_back(0);
      write_member("././@LongLink", 'L', name);
      member_name = member_name.substr(0, 100);
    }
    write_member(member_name, '0', bytes);
  }

  /// Appends the regular file `member_name` holding the characters of `text`.
  void add(std::string_view member_name, std::string_view text) {
    add(member_name, std::span<const std::uint8_t>(
                         reinterpret_cast<const std::uint8_t*>(text.data()), text.size()));
  }

  /// Writes the end-of-archive blocks (two zero blocks, padded to a 10240-byte record as tar
  /// does) and closes the file; throws `stoke::Error` naming it when that fails. A second call
  /// does nothing.
  void finish() {
    if (fd_ < 0) return;
    static constexpr std::size_t record = 20 * detail::tar_block;
    const std::size_t end = written_ + 2 * detail::tar_block;
    const std::vector<std::uint8_t> zeros((end + record - 1) / record * record - written_, 0);
    write_all(zeros);
    const int fd = std::exchange(fd_, -1);
    if (::close(fd) != 0) fail("cannot close", errno);
  }

  /// The archive's path.
  [[nodiscard]] const std::filesystem::path& path() const noexcept { return path_; }

 private:
  /// Writes a header of `type` for `name` (at most 100 bytes) and `data`, padded to a block.
  void write_member(std::string_view name, char type, std::span<const std::uint8_t> data) {
    std::uint8_t header[detail::tar_block] = {};
    std::memcpy(header, name.data(), name.size());
    octal(header + 100, 8, 0644);  // mode
    octal(header + 108, 8, 0);     // uid
    octal(header + 116, 8, 0);     // gid
    size_field(header + 124, data.size());
    octal(header + 136, 12, 0);  // mtime
    header[156] = static_cast<std::uint8_t>(type);
    std::memcpy(header + 257, "ustar  ", 8);  // GNU magic and version, NUL-terminated
    std::memset(header + 148, ' ', 8);
    std::uint32_t sum = 0;
    for (const std::uint8_t b : header) sum += b;
    octal(header + 148, 7, sum);  // six digits, NUL, then the space already there
    write_all(header);
    write_all(data);
    const std::size_t padding =
        (detail::tar_block - data.size() % detail::tar_block) % detail::tar_block;
    const std::uint8_t zeros[detail::tar_block] = {};
    write_all(std::span<const std::uint8_t>(zeros, padding));
  }

  /// `value` in octal, zero-filled to `width - 1` digits and a NUL.
  static void octal(std::uint8_t* field, std::size_t width, std::uint64_t value) {
    field[width - 1] = 0;
    for (std::size_t i = width - 1; i-- > 0; value >>= 3U) {
      field[i] = static_cast<std::uint8_t>('0' + (value & 7U));
    }
  }

  /// The 12-byte size field: octal below 8 GiB, GNU base-256 from there.
  static void size_field(std::uint8_t* field, std::uint64_t value) {
    if (value < (std::uint64_t{1} << 33U)) {
      octal(field, 12, value);
      return;
    }
    field[0] = 0x80;
    for (std::size_t i = 12; i-- > 1; value >>= 8U) field[i] = static_cast<std::uint8_t>(value);
  }

  void write_all(std::span<const std::uint8_t> bytes) {
    for (std::size_t done = 0; done < bytes.size();) {
      const ::ssize_t wrote = ::write(fd_, bytes.data() + done, bytes.size() - done);
      if (wrote < 0 && errno == EINTR) continue;
      if (wrote <= 0) fail("cannot write", wrote < 0 ? errno : EIO);
      done += static_cast<std::size_t>(wrote);
    }
    written_ += bytes.size();
  }

  [[noreturn]] void fail(const std::string& what, int error) const {
    throw Error("stoke: TarWriter: " + what + " '" + path_.string() +
                "': " + std::generic_category().message(error));
  }

  std::filesystem::path path_;
  int fd_ = -1;
  std::size_t written_ = 0;
};

}  // namespace stoke::images

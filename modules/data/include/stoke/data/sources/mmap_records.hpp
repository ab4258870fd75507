#pragma once
/// @file
/// `MmapRecordDataset`: fixed-size records read in place from a memory-mapped file (POSIX).

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <limits>
#include <memory>
#include <span>
#include <string>
#include <system_error>
#include <utility>

#include <stoke/core/error.hpp>
#include <stoke/data/detail/dataset_view.hpp>

namespace stoke {
namespace detail {

/// The path in quotes, for error messages.
inline std::string quoted_path(const std::filesystem::path& path) {
  return "'" + path.string() + "'";
}

/// A whole file mapped read-only into memory; unmapped when destroyed. An empty file maps
/// to an empty span.
class FileMapping {
 public:
  /// Maps `path`; throws `InputError` naming the path and the reason when it cannot.
  explicit FileMapping(std::filesystem::path path) : path_(std::move(path)) {
    const int fd = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) fail("cannot open", errno);
    struct FdCloser {
      int fd;
      ~FdCloser() { ::close(fd); }
    } closer{fd};
    struct stat info{};
    if (::fstat(fd, &info) != 0) fail("cannot stat", errno);
    if (!S_ISREG(info.st_mode)) {
      throw InputError("stoke: cannot map " + quoted_path(path_) + ": not a regular file");
    }
    const auto file_size = static_cast<std::uintmax_t>(info.st_size);
    if (file_size > std::numeric_limits<std::size_t>::max()) {
      throw InputError("stoke: cannot map " + quoted_path(path_) + ": its " +
                       std::to_string(file_size) + " bytes exceed the address space");
    }
    size_ = static_cast<std::size_t>(file_size);
    if (size_ == 0) return;
    void* data = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd, 0);
    if (data == MAP_FAILED) fail("cannot map " + std::to_string(size_) + " bytes of", errno);
    data_ = static_cast<const std::byte*>(data);
  }

  FileMapping(const FileMapping&) = delete;
  FileMapping& operator=(const FileMapping&) = delete;

  ~FileMapping() {
    if (data_ != nullptr) ::munmap(const_cast<std::byte*>(data_), size_);
  }

  /// The mapped file.
  [[nodiscard]] const std::filesystem::path& path() const noexcept { return path_; }

  /// The file's bytes.
  [[nodiscard]] std::span<const std::byte> bytes() const noexcept { return {data_, size_}; }

 private:
  [[noreturn]] void fail(const std::string& what, int error) const {
    throw InputError("stoke: " + what + " " + quoted_path(path_) + ": " +
                     std::generic_category().message(error));
  }

  std::filesystem::path path_;
  const std::byte* data_ = nullptr;
  std::size_t size_ = 0;
};

}  // namespace detail

/// A dataset of fixed-size records stored back to back in a file, read in place: the file is
/// memory-mapped read-only and `get` returns a span into the mapping, without copying.
/// Copies share the mapping; it is unmapped when the last copy is gone. POSIX only.
///
/// The file must keep its size while it is mapped: if another process truncates it, reading
/// a record past the new end raises SIGBUS (the kernel's answer to a mapping beyond the end of
/// its file), which no check at open time can prevent. Copy a file that may shrink first.
class MmapRecordDataset {
 public:
  /// Maps `path` as records of `record_size` bytes. Throws `InputError` naming the path and
  /// the numbers when the record size is 0, or the file is missing, unreadable, empty, or
  /// does not hold a whole number of records.
  MmapRecordDataset(std::filesystem::path path, std::size_t record_size)
      : record_size_(record_size) {
    if (record_size == 0) {
      throw InputError("stoke: record size 0 for " + detail::quoted_path(path) +
                       ": records must be at least 1 byte");
    }
    mapping_ = std::make_shared<const detail::FileMapping>(std::move(path));
    const std::size_t file_size = mapping_->bytes().size();
    if (file_size == 0) {
      throw InputError("stoke: " + detail::quoted_path(mapping_->path()) +
                       " is empty (0 bytes); expected records of " + std::to_string(record_size) +
                       " bytes");
    }
    const std::size_t remainder = file_size % record_size;
    if (remainder != 0) {
      throw InputError("stoke: " + detail::quoted_path(mapping_->path()) + " holds " +
                       std::to_string(file_size) + " bytes, not a multiple of the record size " +
                       std::to_string(record_size) + ": remainder " + std::to_string(remainder) +
                       " bytes, an incomplete last record at offset " +
                       std::to_string(file_size - remainder));
    }
    size_ = file_size / record_size;
  }

  /// Number of records.
  [[nodiscard]] std::size_t size() const noexcept { return size_; }

  /// The bytes of record `index`, inside the mapping; throws `UsageError` naming the
  /// index and the size when `index >= size()`.
  [[nodiscard]] std::span<const std::byte> get(std::size_t index) const {
    detail::check_index(index, size_, "MmapRecordDataset");
    return mapping_->bytes().subspan(index * record_size_, record_size_);
  }

  /// Bytes per record.
  [[nodiscard]] std::size_t record_size() const noexcept { return record_size_; }

  /// The mapped file.
  [[nodiscard]] const std::filesystem::path& path() const noexcept { return mapping_->path(); }

  /// The whole mapping: `size() * record_size()` bytes.
  [[nodiscard]] std::span<const std::byte> bytes() const noexcept { return mapping_->bytes(); }

 private:
  std::shared_ptr<const detail::FileMapping> mapping_;
  std::size_t record_size_ = 0;
  std::size_t size_ = 0;
};

}  // namespace stoke

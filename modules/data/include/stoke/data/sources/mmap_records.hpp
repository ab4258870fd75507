#pragma once
/// @file
/// `MmapRecordDataset`: fixed-size records read from a file (POSIX), in place from a mapping of
/// it or, with `FileAccess::read`, with `pread`; `FileMapping`, the mapping other sources share.

#include <sys/mman.h>

#include <cerrno>
#include <cstddef>
#include <filesystem>
#include <memory>
#include <span>
#include <string>
#include <system_error>
#include <utility>

#include <stoke/core/error.hpp>
#include <stoke/data/check_index.hpp>
#include <stoke/data/sources/detail/open_file.hpp>

namespace stoke {
namespace detail {

/// A whole file mapped read-only into memory; unmapped when destroyed. An empty file maps
/// to an empty span.
class FileMapping {
 public:
  /// Maps `path`; throws `InputError` naming the path and the reason when it cannot (see
  /// `OpenFile`).
  explicit FileMapping(std::filesystem::path path) {
    const OpenFile file(std::move(path), "map");
    path_ = file.path();
    size_ = file.size();
    if (size_ == 0) return;
    void* data = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, file.descriptor(), 0);
    if (data == MAP_FAILED) {
      const int error = errno;
      throw InputError("stoke: cannot map " + std::to_string(size_) + " bytes of " +
                       quoted_path(path_) + ": " + std::generic_category().message(error));
    }
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
  std::filesystem::path path_;
  const std::byte* data_ = nullptr;
  std::size_t size_ = 0;
};

}  // namespace detail

/// How a dataset reads the file it was opened on.
enum class FileAccess {
  /// Memory-map the file and return views into the mapping, without copying (the default).
  /// The file must not change while it is mapped: when it shrinks, touching a record past the
  /// new end raises SIGBUS, which ends the process; when it is rewritten in place, the bytes
  /// of records already returned may change too.
  map,
  /// Read every record with `pread` into memory the record owns: one copy and one system call
  /// per record. A file that shrinks while it is read gives an `InputError` naming the file
  /// and the byte offset of the short read, never a signal. For file systems where files can
  /// change underneath (network and shared file systems, files another job may rewrite).
  read,
};

/// The bytes of one record of a `MmapRecordDataset`: a view into the mapping
/// (`FileAccess::map`), or the bytes read for it (`FileAccess::read`), which it owns and its
/// copies share. A contiguous range of `const std::byte`, convertible to
/// `std::span<const std::byte>`; valid at least while the dataset or a copy of it lives.
class RecordBytes {
 public:
  /// No bytes.
  RecordBytes() = default;

  /// A view of `bytes`, owned by someone else.
  explicit RecordBytes(std::span<const std::byte> bytes) noexcept : bytes_(bytes) {}

  /// The first `size` bytes of `owned`, which the record keeps alive.
  RecordBytes(std::shared_ptr<const std::byte[]> owned, std::size_t size) noexcept
      : bytes_(owned.get(), size), owned_(std::move(owned)) {}

  /// The first byte.
  [[nodiscard]] const std::byte* data() const noexcept { return bytes_.data(); }
  /// Number of bytes.
  [[nodiscard]] std::size_t size() const noexcept { return bytes_.size(); }
  /// Whether there are no bytes.
  [[nodiscard]] bool empty() const noexcept { return bytes_.empty(); }
  /// The first byte, for range-for and the standard algorithms.
  [[nodiscard]] const std::byte* begin() const noexcept { return bytes_.data(); }
  /// One past the last byte.
  [[nodiscard]] const std::byte* end() const noexcept { return bytes_.data() + bytes_.size(); }
  /// Byte `i` (`i < size()`).
  [[nodiscard]] const std::byte& operator[](std::size_t i) const noexcept { return bytes_[i]; }
  /// The bytes as a span.
  [[nodiscard]] std::span<const std::byte> span() const noexcept { return bytes_; }
  /// The bytes as a span, implicitly: a function taking `std::span<const std::byte>` takes a
  /// record.
  operator std::span<const std::byte>() const noexcept {  // NOLINT(google-explicit-constructor)
    return bytes_;
  }

 private:
  std::span<const std::byte> bytes_;
  std::shared_ptr<const std::byte[]> owned_;
};

/// A dataset of fixed-size records stored back to back in a file. Copies share the mapping or
/// the open file; it is unmapped or closed when the last copy is gone. POSIX only.
///
/// How it reads is chosen when it is made (see `FileAccess`):
/// - `FileAccess::map` (the default): the file is memory-mapped read-only and `get` returns a
///   view into the mapping, without copying. The file must keep its size while it is mapped:
///   if another process truncates it, reading a record past the new end raises SIGBUS (the
///   kernel's answer to a mapping beyond the end of its file), which no check at open time can
///   prevent.
/// - `FileAccess::read`: `get` reads the record with `pread` into bytes it returns; a record
///   past the end of a file that shrank is an `InputError` naming the file and the offset.
class MmapRecordDataset {
 public:
  /// Opens `path` as records of `record_size` bytes, read as `access` says. Throws
  /// `InputError` naming the path and the numbers when the record size is 0, or the file is
  /// missing, unreadable, not a regular file, empty, or does not hold a whole number of
  /// records.
  MmapRecordDataset(std::filesystem::path path, std::size_t record_size,
                    FileAccess access = FileAccess::map)
      : record_size_(record_size), access_(access) {
    if (record_size == 0) {
      throw InputError("stoke: record size 0 for " + detail::quoted_path(path) +
                       ": records must be at least 1 byte");
    }
    std::size_t file_size = 0;
    if (access == FileAccess::map) {
      mapping_ = std::make_shared<const detail::FileMapping>(std::move(path));
      file_size = mapping_->bytes().size();
    } else {
      file_ = std::make_shared<const detail::OpenFile>(std::move(path), "read");
      file_size = file_->size();
    }
    if (file_size == 0) {
      throw InputError("stoke: " + detail::quoted_path(this->path()) +
                       " is empty (0 bytes); expected records of " + std::to_string(record_size) +
                       " bytes");
    }
    const std::size_t remainder = file_size % record_size;
    if (remainder != 0) {
      throw InputError("stoke: " + detail::quoted_path(this->path()) + " holds " +
                       std::to_string(file_size) + " bytes, not a multiple of the record size " +
                       std::to_string(record_size) + ": remainder " + std::to_string(remainder) +
                       " bytes, an incomplete last record at offset " +
                       std::to_string(file_size - remainder));
    }
    size_ = file_size / record_size;
  }

  /// Number of records (when the file was opened).
  [[nodiscard]] std::size_t size() const noexcept { return size_; }

  /// The bytes of record `index`: inside the mapping, or read for it (see `FileAccess`).
  /// Throws `UsageError` naming the index and the size when `index >= size()`; with
  /// `FileAccess::read`, `InputError` naming the file and the byte offset when the read fails
  /// or the file now ends before the record does.
  [[nodiscard]] RecordBytes get(std::size_t index) const {
    stoke::check_index(index, size_, "MmapRecordDataset");
    if (access_ == FileAccess::map) {
      return RecordBytes(mapping_->bytes().subspan(index * record_size_, record_size_));
    }
    std::shared_ptr<std::byte[]> bytes = std::make_shared_for_overwrite<std::byte[]>(record_size_);
    file_->read_at(index * record_size_, {bytes.get(), record_size_});
    return {std::move(bytes), record_size_};
  }

  /// Bytes per record.
  [[nodiscard]] std::size_t record_size() const noexcept { return record_size_; }

  /// How records are read.
  [[nodiscard]] FileAccess access() const noexcept { return access_; }

  /// The file.
  [[nodiscard]] const std::filesystem::path& path() const noexcept {
    return mapping_ ? mapping_->path() : file_->path();
  }

  /// The whole mapping: `size() * record_size()` bytes. Throws `UsageError` with
  /// `FileAccess::read`, which maps nothing.
  [[nodiscard]] std::span<const std::byte> bytes() const {
    if (!mapping_) {
      throw UsageError("stoke: MmapRecordDataset::bytes: " + detail::quoted_path(path()) +
                       " is read with FileAccess::read, not mapped");
    }
    return mapping_->bytes();
  }

 private:
  std::shared_ptr<const detail::FileMapping> mapping_;  // FileAccess::map
  std::shared_ptr<const detail::OpenFile> file_;        // FileAccess::read
  std::size_t record_size_ = 0;
  FileAccess access_ = FileAccess::map;
  std::size_t size_ = 0;
};

}  // namespace stoke

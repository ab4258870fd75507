#pragma once
/// @file
/// `TokenIndex`: the `.idx` file of Megatron-LM's indexed dataset, memory-mapped and checked
/// whole against its `.bin` file before anything is read through it.
///
/// The layout (all little-endian): the magic `MMIDIDX\0\0` (9 bytes), the version 1 (u64), the
/// dtype code (u8, see `megatron_dtype`), the sequence count N (u64), the document count D
/// (u64); then N int32 sequence lengths (in tokens), N int64 sequence pointers (byte offsets
/// into `.bin`), D int64 document indices (the sequence each document ends before: 0 first,
/// non-decreasing), and, in a multimodal dataset, N int8 sequence modes.

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <memory>
#include <span>
#include <string>
#include <utility>

#include <stoke/core/error.hpp>
#include <stoke/data/sources/array_shard.hpp>
#include <stoke/data/sources/mmap_records.hpp>
#include <stoke/sequences/megatron_dtype.hpp>
#include <stoke/sequences/unaligned_span.hpp>

namespace stoke {

/// Where the fields of a Megatron `.idx` header lie, in bytes from the start of the file.
struct TokenIndexHeader {
  static constexpr char magic[9] = {'M', 'M', 'I', 'D', 'I', 'D', 'X', '\0', '\0'};  ///< bytes 0-8
  static constexpr std::size_t version_offset = 9;          ///< u64, always 1
  static constexpr std::size_t dtype_offset = 17;           ///< u8, the dtype code
  static constexpr std::size_t sequence_count_offset = 18;  ///< u64
  static constexpr std::size_t document_count_offset = 26;  ///< u64
  static constexpr std::size_t size = 34;                   ///< where the lengths begin
};

namespace detail {

/// Reads a little-endian `T` at byte `offset` of `bytes` (the caller checked the range).
template <class T>
T load_at(std::span<const std::byte> bytes, std::size_t offset) noexcept {
  T value;
  std::memcpy(&value, bytes.data() + offset, sizeof(T));
  return value;
}

/// What a checked `.idx` file holds: the type, the counts and where the arrays begin.
struct TokenIndexLayout {
  DType dtype = DType::i32;
  std::size_t sequences = 0;
  std::size_t documents = 0;  ///< entries of the document index (one more than documents)
  std::size_t pointers_offset = 0;
  std::size_t documents_offset = 0;
  bool multimodal = false;  ///< whether N sequence modes follow the document index
};

/// Checks the `.idx` bytes `bytes` of `idx` against a `.bin` file `bin` of `bin_size` bytes
/// and says where everything lies; throws `InputError` naming the file and the byte offset of
/// the first field that is wrong.
class TokenIndexCheck {
 public:
  TokenIndexCheck(std::span<const std::byte> bytes, const std::filesystem::path& idx,
                  const std::filesystem::path& bin, std::size_t bin_size)
      : bytes_(bytes), idx_(idx), bin_(bin), bin_size_(bin_size) {}

  /// The layout, once every field is checked.
  TokenIndexLayout run() const {
    TokenIndexLayout layout = header();
    check_sequences(layout);
    check_documents(layout);
    return layout;
  }

 private:
  using H = TokenIndexHeader;

  [[noreturn]] void fail(std::size_t offset, const std::string& what) const {
    throw InputError("stoke: token index " + quoted_path(idx_) + " at byte offset " +
                     std::to_string(offset) + ": " + what);
  }

  /// The header's fields, and the sizes of the arrays checked against the file's size.
  TokenIndexLayout header() const {
    const std::size_t size = bytes_.size();
    if (size < H::size) {
      fail(size, "the file ends after " + std::to_string(size) + " bytes; a Megatron index " +
                     "header has " + std::to_string(H::size));
    }
    for (std::size_t i = 0; i < sizeof(H::magic); ++i) {
      if (bytes_[i] != static_cast<std::byte>(H::magic[i])) {
        fail(i, "not a Megatron index: the file must begin with the magic MMIDIDX\\0\\0");
      }
    }
    if (const auto version = load_at<std::uint64_t>(bytes_, H::version_offset); version != 1) {
      fail(H::version_offset, "version " + std::to_string(version) + "; only version 1 exists");
    }
    TokenIndexLayout layout;
    const auto code = load_at<std::uint8_t>(bytes_, H::dtype_offset);
    const auto dtype = megatron_dtype(code);
    if (!dtype) {
      fail(H::dtype_offset, "unknown dtype code " + std::to_string(code) +
                                " (Megatron's: 1 uint8, 2 int8, 3 int16, 4 int32, 5 int64, "
                                "6 float64, 7 float32, 8 uint16)");
    }
    layout.dtype = *dtype;
    const std::size_t sequences = count(H::sequence_count_offset, "sequence", 12,
                                        "lengths and pointers", H::size, "the header");
    layout.sequences = sequences;
    layout.pointers_offset = H::size + 4 * sequences;
    layout.documents_offset = layout.pointers_offset + 8 * sequences;
    const std::size_t documents = count(H::document_count_offset, "document", 8, "document indices",
                                        layout.documents_offset, "the sequence pointers");
    if (documents == 0) {
      fail(H::document_count_offset,
           "document count 0; the document index begins with 0, so it has at least 1 entry");
    }
    layout.documents = documents;
    const std::size_t end = layout.documents_offset + 8 * documents;
    const std::size_t trailing = size - end;
    if (trailing != 0 && trailing != sequences) {
      fail(end, std::to_string(trailing) + " bytes after the document index, where the file " +
                    "ends (or holds " + std::to_string(sequences) + " sequence modes)");
    }
    layout.multimodal = trailing != 0;
    return layout;
  }

  /// The u64 count at `offset` of items of `item_bytes` each, which must fit in the file after
  /// byte `from` (where `before` ends).
  std::size_t count(std::size_t offset, const std::string& item, std::size_t item_bytes,
                    const std::string& arrays, std::size_t from, const std::string& before) const {
    const auto value = load_at<std::uint64_t>(bytes_, offset);
    const std::size_t room = bytes_.size() - from;
    if (value > room / item_bytes) {
      const std::string needed = value > SIZE_MAX / item_bytes
                                     ? std::string("more than the address space")
                                     : std::to_string(value * item_bytes);
      fail(offset, item + " count " + std::to_string(value) + " needs " + needed + " bytes of " +
                       arrays + "; the file holds " + std::to_string(room) + " after " + before);
    }
    return static_cast<std::size_t>(value);
  }

  /// Lengths are not negative, pointers follow them back to back from 0, and the sequences
  /// fill the `.bin` file exactly.
  void check_sequences(const TokenIndexLayout& layout) const {
    const std::size_t token_size = dtype_size(layout.dtype);
    std::size_t end = 0;  // bytes of .bin the sequences so far take
    for (std::size_t i = 0; i < layout.sequences; ++i) {
      const std::size_t length_offset = H::size + 4 * i;
      const std::size_t pointer_offset = layout.pointers_offset + 8 * i;
      const auto length = load_at<std::int32_t>(bytes_, length_offset);
      const auto pointer = load_at<std::int64_t>(bytes_, pointer_offset);
      // The messages are made only for a refusal: this loop runs once per sequence.
      const auto sequence = [i] { return "sequence " + std::to_string(i); };
      if (length < 0) fail(length_offset, sequence() + " has length " + std::to_string(length));
      if (pointer < 0 || static_cast<std::uint64_t>(pointer) != end) {
        const bool past = pointer < 0 || static_cast<std::uint64_t>(pointer) > bin_size_;
        fail(pointer_offset,
             sequence() + " begins at byte " + std::to_string(pointer) + " of " +
                 quoted_path(bin_) +
                 (past ? ", past its end (" + std::to_string(bin_size_) + " bytes)" : "") +
                 "; sequences lie back to back, so it must begin at byte " + std::to_string(end) +
                 ", where the one before it ends");
      }
      const std::size_t bytes = static_cast<std::size_t>(length) * token_size;
      if (bytes > bin_size_ - end) {
        fail(length_offset, sequence() + " of " + std::to_string(length) + " tokens from byte " +
                                std::to_string(end) + " ends at byte " +
                                std::to_string(end + bytes) + ", past the end of " +
                                quoted_path(bin_) + " (" + std::to_string(bin_size_) + " bytes)");
      }
      end += bytes;
    }
    if (end != bin_size_) {
      throw InputError("stoke: token data " + quoted_path(bin_) + " holds " +
                       std::to_string(bin_size_) + " bytes, but its index " + quoted_path(idx_) +
                       " ends its last sequence at byte offset " + std::to_string(end) +
                       " (the .bin file does not belong to this index, or was cut short)");
    }
  }

  /// The document index begins with 0, never decreases and stays within the sequences.
  void check_documents(const TokenIndexLayout& layout) const {
    std::int64_t previous = 0;
    for (std::size_t j = 0; j < layout.documents; ++j) {
      const std::size_t offset = layout.documents_offset + 8 * j;
      const auto value = load_at<std::int64_t>(bytes_, offset);
      const auto entry = [&] {  // made only for a refusal
        return "document index entry " + std::to_string(j) + " is " + std::to_string(value);
      };
      if (j == 0 && value != 0) fail(offset, entry() + "; the first entry must be 0");
      if (value < previous) {
        fail(offset, entry() + ", before entry " + std::to_string(j - 1) + " (" +
                         std::to_string(previous) + "): documents out of order");
      }
      if (static_cast<std::uint64_t>(value) > layout.sequences) {
        fail(offset, entry() + ", past the sequence count " + std::to_string(layout.sequences));
      }
      previous = value;
    }
  }

  std::span<const std::byte> bytes_;
  const std::filesystem::path& idx_;
  const std::filesystem::path& bin_;
  std::size_t bin_size_;
};

}  // namespace detail

/// The `.idx` file of a Megatron indexed dataset, memory-mapped and checked whole when opened
/// (one pass over its lengths, pointers and document index), so that every sequence it
/// describes lies inside its `.bin` file. Copies share the mapping.
///
/// Refused with an `InputError` naming the file and the byte offset: a file shorter than the
/// header, a wrong magic or version, an unknown dtype code, counts whose arrays overflow the
/// file, bytes after the document index (other than the sequence modes of a multimodal
/// dataset), a negative length, a pointer that does not follow the lengths back to back from 0
/// (or points past the end of `.bin`), a sequence that runs past the end of `.bin`, a `.bin`
/// longer than the sequences, and a document index that does not begin with 0, decreases, or
/// names a sequence past the count.
class TokenIndex {
 public:
  /// Maps `idx` and checks it against the `.bin` file `bin`, which holds `bin_size` bytes.
  TokenIndex(std::filesystem::path idx, std::filesystem::path bin, std::size_t bin_size)
      : mapping_(std::make_shared<const detail::FileMapping>(std::move(idx))),
        bin_(std::move(bin)),
        bin_size_(bin_size),
        layout_(
            detail::TokenIndexCheck(mapping_->bytes(), mapping_->path(), bin_, bin_size).run()) {}

  /// The `.idx` file.
  [[nodiscard]] const std::filesystem::path& path() const noexcept { return mapping_->path(); }
  /// The `.bin` file it describes.
  [[nodiscard]] const std::filesystem::path& bin_path() const noexcept { return bin_; }
  /// The size of the `.bin` file it was checked against.
  [[nodiscard]] std::size_t bin_size() const noexcept { return bin_size_; }
  /// The token type.
  [[nodiscard]] DType dtype() const noexcept { return layout_.dtype; }
  /// Number of sequences (the items of Megatron's `IndexedDataset`).
  [[nodiscard]] std::size_t sequence_count() const noexcept { return layout_.sequences; }
  /// Number of tokens of all sequences.
  [[nodiscard]] std::size_t token_count() const noexcept {
    return bin_size_ / dtype_size(layout_.dtype);
  }
  /// Whether the file also holds a mode per sequence (Megatron's multimodal datasets; stoke
  /// reads the tokens and leaves the modes).
  [[nodiscard]] bool multimodal() const noexcept { return layout_.multimodal; }

  /// The length of every sequence in tokens, read in place (no tokens are touched).
  [[nodiscard]] UnalignedSpan<std::int32_t> lengths() const noexcept {
    return {mapping_->bytes().data() + TokenIndexHeader::size, layout_.sequences};
  }
  /// The byte offset of every sequence in `.bin`, read in place.
  [[nodiscard]] UnalignedSpan<std::int64_t> pointers() const noexcept {
    return {mapping_->bytes().data() + layout_.pointers_offset, layout_.sequences};
  }
  /// Megatron's document index: 0, then the sequence each document ends before.
  [[nodiscard]] UnalignedSpan<std::int64_t> document_index() const noexcept {
    return {mapping_->bytes().data() + layout_.documents_offset, layout_.documents};
  }
  /// Number of documents: one less than the document index's entries.
  [[nodiscard]] std::size_t document_count() const noexcept { return layout_.documents - 1; }

 private:
  std::shared_ptr<const detail::FileMapping> mapping_;
  std::filesystem::path bin_;
  std::size_t bin_size_ = 0;
  detail::TokenIndexLayout layout_;
};

}  // namespace stoke

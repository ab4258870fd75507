#pragma once
/// @file
/// `TokenStoreWriter<T>`: writes a Megatron-LM indexed dataset (`<prefix>.bin` +
/// `<prefix>.idx`) from C++, both files put in place atomically.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <limits>
#include <span>
#include <string>
#include <vector>

#include <stoke/core/atomic_file.hpp>
#include <stoke/core/error.hpp>
#include <stoke/sequences/megatron_dtype.hpp>
#include <stoke/sequences/token_index.hpp>
#include <stoke/sequences/token_store.hpp>

namespace stoke {

/// Writes a token store that Megatron-LM's `IndexedDataset` and `TokenStore<T>` read, in the
/// way Megatron's `IndexedDatasetBuilder` does: `add_sequence` appends a sequence of tokens to
/// the document being written, `end_document` closes the document, `add_document` does both.
///
/// The tokens stream to a temporary `.bin` file as they come; the index (4 bytes of length
/// and 8 of document index per sequence) is kept in memory until `finish`, which writes the
/// `.idx` file and puts both in place: `.bin` first, then `.idx`, each by an atomic rename. A
/// reader sees the old store or the new one; a crash between the two renames leaves a new
/// `.bin` beside the old `.idx`, which `TokenStore` refuses (the sizes do not match) unless
/// both describe the same tokens. A writer dropped before `finish` removes its temporary files
/// and leaves any old store as it was.
template <TokenType T>
class TokenStoreWriter {
 public:
  /// A writer of `<prefix>.bin` and `<prefix>.idx`; throws `stoke::Error` naming the file
  /// when its temporary file cannot be created.
  explicit TokenStoreWriter(const std::filesystem::path& prefix)
      : paths_(token_store_paths(prefix)), bin_(paths_.bin) {
    buffer_.reserve(buffer_bytes);
  }

  /// Appends a sequence of `tokens` to the current document. Throws `UsageError` after
  /// `finish`, or when the sequence has more tokens than an int32 length can say.
  void add_sequence(std::span<const T> tokens) {
    check_open("add_sequence");
    if (tokens.size() > static_cast<std::size_t>(std::numeric_limits<std::int32_t>::max())) {
      throw UsageError("stoke: TokenStoreWriter for " + detail::quoted_path(paths_.bin) +
                       ": a sequence of " + std::to_string(tokens.size()) +
                       " tokens; Megatron's index stores lengths as int32");
    }
    lengths_.push_back(static_cast<std::int32_t>(tokens.size()));
    const auto bytes = std::as_bytes(tokens);
    if (buffer_.size() + bytes.size() > buffer_bytes) flush();
    if (bytes.size() >= buffer_bytes) {
      bin_.write(bytes);
    } else {
      buffer_.insert(buffer_.end(), bytes.begin(), bytes.end());
    }
  }

  /// Ends the current document (an empty one if no sequence was added since the last).
  void end_document() {
    check_open("end_document");
    documents_.push_back(static_cast<std::int64_t>(lengths_.size()));
  }

  /// A document of one sequence: `add_sequence(tokens)`, then `end_document()`.
  void add_document(std::span<const T> tokens) {
    add_sequence(tokens);
    end_document();
  }

  /// Sequences added so far.
  [[nodiscard]] std::size_t sequence_count() const noexcept { return lengths_.size(); }
  /// Documents ended so far.
  [[nodiscard]] std::size_t document_count() const noexcept { return documents_.size() - 1; }

  /// Ends a document left open (sequences added after the last `end_document`), writes the
  /// index and puts both files in place. Throws `stoke::Error` naming the file when one cannot
  /// be written, `UsageError` when called twice.
  void finish() {
    check_open("finish");
    if (static_cast<std::size_t>(documents_.back()) != lengths_.size()) end_document();
    flush();
    finished_ = true;
    AtomicFileWriter idx(paths_.idx);
    write_index(idx);
    bin_.commit();
    idx.commit();
  }

  /// The files it writes.
  [[nodiscard]] const TokenStorePaths& paths() const noexcept { return paths_; }

 private:
  static constexpr std::size_t buffer_bytes = std::size_t{1} << 20;

  void check_open(const char* call) const {
    if (finished_) {
      throw UsageError(std::string("stoke: TokenStoreWriter::") + call + " after finish, for " +
                       detail::quoted_path(paths_.idx));
    }
  }

  void flush() {
    bin_.write(buffer_);
    buffer_.clear();
  }

  template <class V>
  static void write_values(AtomicFileWriter& file, std::span<const V> values) {
    file.write(std::as_bytes(values));
  }

  /// The header, the lengths, the pointers (computed in pieces) and the document index.
  void write_index(AtomicFileWriter& idx) const {
    using H = TokenIndexHeader;
    std::vector<std::byte> header(H::size);
    const auto put = [&](std::size_t offset, auto value) {
      std::memcpy(header.data() + offset, &value, sizeof(value));
    };
    std::memcpy(header.data(), H::magic, sizeof(H::magic));
    put(H::version_offset, std::uint64_t{1});
    put(H::dtype_offset, megatron_code(dtype_of<T>()));
    put(H::sequence_count_offset, static_cast<std::uint64_t>(lengths_.size()));
    put(H::document_count_offset, static_cast<std::uint64_t>(documents_.size()));
    idx.write(header);
    write_values<std::int32_t>(idx, lengths_);
    std::vector<std::int64_t> pointers;
    pointers.reserve(std::min<std::size_t>(lengths_.size(), pointers_per_write));
    std::int64_t pointer = 0;
    for (const std::int32_t length : lengths_) {
      pointers.push_back(pointer);
      pointer += static_cast<std::int64_t>(length) * static_cast<std::int64_t>(sizeof(T));
      if (pointers.size() == pointers_per_write) {
        write_values<std::int64_t>(idx, pointers);
        pointers.clear();
      }
    }
    write_values<std::int64_t>(idx, pointers);
    write_values<std::int64_t>(idx, documents_);
  }

  static constexpr std::size_t pointers_per_write = std::size_t{1} << 16;

  TokenStorePaths paths_;
  AtomicFileWriter bin_;
  std::vector<std::byte> buffer_;
  std::vector<std::int32_t> lengths_;
  std::vector<std::int64_t> documents_{0};
  bool finished_ = false;
};

}  // namespace stoke

#pragma once
/// @file
/// `TokenStore<T>`: a Megatron-LM indexed dataset (`<prefix>.bin` + `<prefix>.idx`) read in
/// place, as a dataset whose items are the tokens of its sequences, and `token_store_paths`.

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <span>
#include <string>
#include <utility>

#include <stoke/core/error.hpp>
#include <stoke/data/check_index.hpp>
#include <stoke/data/sources/array_shard.hpp>
#include <stoke/data/sources/mmap_records.hpp>
#include <stoke/sequences/megatron_dtype.hpp>
#include <stoke/sequences/token_index.hpp>
#include <stoke/sequences/unaligned_span.hpp>

namespace stoke {

/// The two files of a token store.
struct TokenStorePaths {
  std::filesystem::path bin;  ///< the tokens, back to back
  std::filesystem::path idx;  ///< the index: lengths, pointers, documents
};

/// `<prefix>.bin` and `<prefix>.idx` (Megatron's naming: `corpus_text_document` names
/// `corpus_text_document.bin` and `.idx`).
inline TokenStorePaths token_store_paths(const std::filesystem::path& prefix) {
  std::filesystem::path bin = prefix;
  std::filesystem::path idx = prefix;
  bin += ".bin";
  idx += ".idx";
  return {std::move(bin), std::move(idx)};
}

namespace detail {

/// Throws `InputError` naming `index`'s file when its tokens are not of type `T`.
template <TokenType T>
void check_token_type(const TokenIndex& index, const std::string& reader) {
  if (index.dtype() != dtype_of<T>()) {
    throw InputError("stoke: token index " + quoted_path(index.path()) + " at byte offset " +
                     std::to_string(TokenIndexHeader::dtype_offset) + ": its tokens are " +
                     dtype_name(index.dtype()) + ", not the " + dtype_name(dtype_of<T>()) +
                     " this " + reader + " reads");
  }
}

}  // namespace detail

/// A Megatron-LM indexed dataset read in place: both files memory-mapped, the index checked
/// whole when opened (see `TokenIndex`), and each item a `std::span` of a sequence's tokens
/// inside the mapped `.bin` file, without a copy. Copies share the mappings. POSIX only.
///
/// - Items are Megatron's sequences (what its `IndexedDataset[i]` returns and its `GPTDataset`
///   packs). A corpus written with one sequence per document (Megatron's `preprocess_data.py`
///   without sentence splitting, `TokenStoreWriter::add_document`) has one per document;
///   `document(j)` gives the tokens of document `j` whichever way it was written.
/// - `lengths()` reads every sequence's length from the index alone, for planners that need
///   lengths without touching tokens.
/// - The files must not shrink while mapped (see `FileAccess::map`).
template <TokenType T>
class TokenStore {
 public:
  /// Opens `<prefix>.bin` and `<prefix>.idx`. Throws `InputError` naming the file (and, for
  /// the index, the byte offset) when either cannot be read, the index is corrupt (see
  /// `TokenIndex`), does not describe the `.bin` file, or holds tokens of another type than `T`.
  explicit TokenStore(const std::filesystem::path& prefix) {
    const TokenStorePaths paths = token_store_paths(prefix);
    auto bin = std::make_shared<const detail::FileMapping>(paths.bin);
    const std::size_t bin_size = bin->bytes().size();
    shared_ =
        std::make_shared<const Shared>(TokenIndex(paths.idx, paths.bin, bin_size), std::move(bin));
    detail::check_token_type<T>(shared_->index, "TokenStore");
  }

  /// Number of sequences.
  [[nodiscard]] std::size_t size() const noexcept { return shared_->index.sequence_count(); }

  /// The tokens of sequence `index`, in place in the mapped `.bin` file; valid while the store
  /// or a copy of it lives. Throws `UsageError` naming the index and the size when out of range.
  [[nodiscard]] std::span<const T> get(std::size_t index) const {
    stoke::check_index(index, size(), "TokenStore");
    const TokenIndex& idx = shared_->index;
    return tokens(static_cast<std::size_t>(idx.pointers()[index]),
                  static_cast<std::size_t>(idx.lengths()[index]));
  }

  /// The length of every sequence in tokens, read from the index in place.
  [[nodiscard]] UnalignedSpan<std::int32_t> lengths() const noexcept {
    return shared_->index.lengths();
  }

  /// Number of documents (groups of consecutive sequences).
  [[nodiscard]] std::size_t document_count() const noexcept {
    return shared_->index.document_count();
  }

  /// The tokens of document `j`: its sequences, which lie back to back. Throws `UsageError`
  /// when `j >= document_count()`.
  [[nodiscard]] std::span<const T> document(std::size_t j) const {
    stoke::check_index(j, document_count(), "TokenStore::document");
    const TokenIndex& idx = shared_->index;
    const auto first = static_cast<std::size_t>(idx.document_index()[j]);
    const auto last = static_cast<std::size_t>(idx.document_index()[j + 1]);
    if (first == last) return {};
    const auto begin = static_cast<std::size_t>(idx.pointers()[first]);
    const auto end = static_cast<std::size_t>(idx.pointers()[last - 1]) +
                     static_cast<std::size_t>(idx.lengths()[last - 1]) * sizeof(T);
    return tokens(begin, (end - begin) / sizeof(T));
  }

  /// Number of tokens of all sequences.
  [[nodiscard]] std::size_t token_count() const noexcept { return shared_->index.token_count(); }

  /// The index (its file, counts, lengths, pointers and document index).
  [[nodiscard]] const TokenIndex& index() const noexcept { return shared_->index; }

 private:
  struct Shared {
    TokenIndex index;
    std::shared_ptr<const detail::FileMapping> bin;
  };

  /// `count` tokens from byte `offset` of `.bin` (checked by the index to lie inside it).
  [[nodiscard]] std::span<const T> tokens(std::size_t offset, std::size_t count) const noexcept {
    if (count == 0) return {};
    return {reinterpret_cast<const T*>(shared_->bin->bytes().data() + offset), count};
  }

  std::shared_ptr<const Shared> shared_;
};

}  // namespace stoke

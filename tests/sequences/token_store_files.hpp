#pragma once
/// @file
/// Token stores for the tests: random corpora (documents of one or more sequences of random
/// lengths), written with `TokenStoreWriter` and remembered, and the raw bytes of files.

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <span>
#include <vector>

#include <stoke/sequences/token_store_writer.hpp>

namespace stoke::testing {

/// A corpus: the tokens of every sequence, and the sequence each document ends before.
template <class T>
struct Corpus {
  std::vector<std::vector<T>> sequences;
  std::vector<std::int64_t> document_index{0};
};

/// A random corpus: up to `max_documents` documents of 1 to 3 sequences (when `multi`), each
/// of 0 to `max_length` tokens, with some empty documents; drawn from `seed`.
template <class T>
Corpus<T> random_corpus(std::uint64_t seed, std::size_t max_documents = 40,
                        std::size_t max_length = 300, bool multi = true) {
  std::mt19937_64 random(seed);
  const auto below = [&](std::size_t n) { return static_cast<std::size_t>(random() % n); };
  Corpus<T> corpus;
  const std::size_t documents = below(max_documents + 1);
  for (std::size_t d = 0; d < documents; ++d) {
    const std::size_t sequences = below(10) == 0 ? 0 : (multi ? 1 + below(3) : 1);
    for (std::size_t s = 0; s < sequences; ++s) {
      std::vector<T> tokens(below(max_length + 1));
      for (auto& token : tokens) token = static_cast<T>(random() % 50000);
      corpus.sequences.push_back(std::move(tokens));
    }
    corpus.document_index.push_back(static_cast<std::int64_t>(corpus.sequences.size()));
  }
  return corpus;
}

/// Writes `corpus` as the store `prefix` with `TokenStoreWriter`.
template <class T>
void write_corpus(const std::filesystem::path& prefix, const Corpus<T>& corpus) {
  TokenStoreWriter<T> writer(prefix);
  std::size_t next = 0;
  for (std::size_t d = 1; d < corpus.document_index.size(); ++d) {
    for (; next < static_cast<std::size_t>(corpus.document_index[d]); ++next) {
      writer.add_sequence(corpus.sequences[next]);
    }
    writer.end_document();
  }
  writer.finish();
}

/// The bytes of the file `path`.
inline std::vector<std::byte> read_bytes(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::vector<char> chars((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<std::byte> bytes(chars.size());
  if (!chars.empty()) std::memcpy(bytes.data(), chars.data(), chars.size());
  return bytes;
}

/// Writes `bytes` to `path`, replacing it.
inline void write_bytes(const std::filesystem::path& path, std::span<const std::byte> bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()),
            static_cast<std::streamsize>(bytes.size()));
  ASSERT_TRUE(out.good()) << "could not write " << path;
}

/// Stores `value` at byte `offset` of `bytes`, little-endian.
template <class V>
void put(std::vector<std::byte>& bytes, std::size_t offset, V value) {
  ASSERT_LE(offset + sizeof(V), bytes.size());
  std::memcpy(bytes.data() + offset, &value, sizeof(V));
}

}  // namespace stoke::testing

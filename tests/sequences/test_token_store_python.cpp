// Token stores across languages: what TokenStoreWriter writes, a Python reference reader
// written from Megatron's format (read_token_store.py, numpy) reads back; what the recipes'
// Python writer (scripts/token_store.py) writes, TokenStore reads back. Both for random corpora
// and every token type; and the corpus recipe (scripts/make_corpus.py) on a tiny corpus.
// Skipped, saying why, where numpy cannot be imported.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <stoke/sequences/sharded_token_store.hpp>
#include <stoke/sequences/token_store.hpp>

#include "stoke_test_files.hpp"
#include "token_store_files.hpp"

namespace {

using stoke::testing::Corpus;
using stoke::testing::random_corpus;
using stoke::testing::TempDir;
using stoke::testing::write_corpus;

/// The standard output of `command` and whether it exited with 0.
std::pair<std::string, int> output_of(const std::string& command) {
  std::string out;
  FILE* pipe = ::popen(command.c_str(), "r");
  if (pipe == nullptr) return {out, -1};
  char buffer[4096];
  for (std::size_t got = 0; (got = std::fread(buffer, 1, sizeof(buffer), pipe)) > 0;) {
    out.append(buffer, got);
  }
  return {out, ::pclose(pipe)};
}

/// The standard output of `script` run with `arguments` under STOKE_PYTHON; fails the test
/// when it exits with another status than 0.
std::string run_python(const std::string& script, const std::string& arguments) {
  const auto [out, status] =
      output_of("'" + std::string(STOKE_TEST_PYTHON) + "' '" + script + "' " + arguments);
  EXPECT_EQ(status, 0) << script << " " << arguments;
  return out;
}

/// Skips the test where numpy cannot be imported by STOKE_PYTHON.
class PythonTokenStores : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string python = STOKE_TEST_PYTHON;
    if (python.empty()) GTEST_SKIP() << "no Python interpreter (STOKE_PYTHON)";
    if (output_of("'" + python + "' -c 'import numpy' 2>/dev/null").second != 0) {
      GTEST_SKIP() << "numpy cannot be imported by " << python;
    }
  }
  TempDir dir_;
};

/// Random corpora of every token type, drawn from `seed` on, and their names.
template <class T>
struct Corpora {
  std::vector<Corpus<T>> corpora;
  std::vector<std::string> names;
};

/// Six random corpora of `T` (seeds from `seed` on), named after their type and seed.
template <class T>
Corpora<T> draw(std::uint64_t seed) {
  Corpora<T> drawn;
  for (std::uint64_t s = seed; s < seed + 6; ++s) {
    drawn.corpora.push_back(random_corpus<T>(s, 12, 40));
    drawn.names.push_back(stoke::dtype_name(stoke::dtype_of<T>()) + std::to_string(s));
  }
  return drawn;
}

/// Runs `check` with a fresh set of random corpora of each token type.
template <class Check>
void for_every_type(Check check) {
  check(draw<std::uint8_t>(1));
  check(draw<std::int8_t>(11));
  check(draw<std::int16_t>(21));
  check(draw<std::uint16_t>(31));
  check(draw<std::int32_t>(41));
  check(draw<std::int64_t>(51));
  check(draw<float>(61));
  check(draw<double>(71));
}

/// The JSON the Python writer reads: the corpus's documents, each a list of sequences.
template <class T>
nlohmann::json writer_spec(const Corpus<T>& corpus) {
  nlohmann::json documents = nlohmann::json::array();
  for (std::size_t d = 1; d < corpus.document_index.size(); ++d) {
    nlohmann::json document = nlohmann::json::array();
    for (auto s = corpus.document_index[d - 1]; s < corpus.document_index[d]; ++s) {
      document.push_back(corpus.sequences[static_cast<std::size_t>(s)]);
    }
    documents.push_back(document);
  }
  return {{"dtype", stoke::dtype_name(stoke::dtype_of<T>())}, {"documents", documents}};
}

TEST_F(PythonTokenStores, TheReferenceReaderReadsWhatTokenStoreWriterWroteOfEveryType) {
  for_every_type([&]<class T>(const Corpora<T>& drawn) {
    std::string prefixes;
    for (std::size_t c = 0; c < drawn.corpora.size(); ++c) {
      write_corpus(dir_ / drawn.names[c], drawn.corpora[c]);
      prefixes += " '" + (dir_ / drawn.names[c]).string() + "'";
    }
    const auto read = nlohmann::json::parse(run_python(STOKE_TOKEN_STORE_READER, prefixes));
    ASSERT_EQ(read.size(), drawn.corpora.size());
    for (std::size_t c = 0; c < drawn.corpora.size(); ++c) {
      SCOPED_TRACE(drawn.names[c]);
      const Corpus<T>& corpus = drawn.corpora[c];
      EXPECT_EQ(read[c].at("dtype").template get<std::string>(),
                stoke::dtype_name(stoke::dtype_of<T>()));
      EXPECT_EQ(read[c].at("document_index").template get<std::vector<std::int64_t>>(),
                corpus.document_index);
      EXPECT_EQ(read[c].at("sequences").template get<std::vector<std::vector<T>>>(),
                corpus.sequences);
    }
  });
}

TEST_F(PythonTokenStores, TokenStoreReadsWhatThePythonWriterWroteOfEveryType) {
  for_every_type([&]<class T>(const Corpora<T>& drawn) {
    std::string arguments = "from-json";
    for (std::size_t c = 0; c < drawn.corpora.size(); ++c) {
      const auto spec = dir_ / (drawn.names[c] + ".json");
      std::ofstream(spec) << writer_spec(drawn.corpora[c]);
      arguments += " '" + spec.string() + "' '" + (dir_ / drawn.names[c]).string() + "'";
    }
    run_python(STOKE_TOKEN_STORE_WRITER, arguments);
    for (std::size_t c = 0; c < drawn.corpora.size(); ++c) {
      SCOPED_TRACE(drawn.names[c]);
      const Corpus<T>& corpus = drawn.corpora[c];
      const stoke::TokenStore<T> store(dir_ / drawn.names[c]);
      ASSERT_EQ(store.size(), corpus.sequences.size());
      for (std::size_t i = 0; i < store.size(); ++i) {
        ASSERT_EQ(std::vector<T>(store.get(i).begin(), store.get(i).end()), corpus.sequences[i]);
      }
      const auto index = store.index().document_index();
      EXPECT_EQ(std::vector<std::int64_t>(index.begin(), index.end()), corpus.document_index);
    }
  });
}

TEST_F(PythonTokenStores, TheRecipeWritesEveryTextAsADocumentAndASyntheticCorpusOfItsLengths) {
  const std::vector<std::string> texts{"first text", "", "the third text, longer\n"};
  std::filesystem::create_directories(dir_ / "texts" / "sub");
  for (std::size_t t = 0; t < texts.size(); ++t) {
    std::ofstream(dir_ / "texts" / (t == 2 ? "sub" : "") / ("t" + std::to_string(t) + ".txt"))
        << texts[t];
  }
  std::ofstream(dir_ / "texts" / "ignored.html") << "not a .txt file";
  run_python(STOKE_MAKE_CORPUS, "real '" + (dir_ / "real").string() + "' --source '" +
                                    (dir_ / "texts").string() + "' --tokenizer bytes");
  const stoke::TokenStore<std::uint16_t> real(dir_ / "real");
  ASSERT_EQ(real.size(), texts.size());
  std::set<std::int32_t> real_lengths;
  for (std::size_t t = 0; t < texts.size(); ++t) {  // sorted: sub/t2.txt, t0.txt, t1.txt
    const std::string& text = texts[(t + 2) % 3];
    std::vector<std::uint16_t> expected(text.begin(), text.end());
    expected.push_back(50256);  // GPT-2's end of text
    EXPECT_EQ(std::vector<std::uint16_t>(real.get(t).begin(), real.get(t).end()), expected);
    real_lengths.insert(real.lengths()[t]);
  }
  run_python(STOKE_MAKE_CORPUS, "synthetic '" + (dir_ / "synthetic").string() +
                                    "' --lengths-from '" + (dir_ / "real").string() +
                                    "' --tokens 5000 --shards 2 --seed 3");
  const stoke::ShardedTokenStore<std::uint16_t> synthetic(dir_ / "synthetic");
  ASSERT_EQ(synthetic.shard_count(), 2U);
  std::size_t tokens = 0;
  for (std::size_t k = 0; k < 2; ++k) {
    const auto lengths = synthetic.lengths(k);
    for (std::size_t i = 0; i < lengths.size(); ++i) {
      tokens += static_cast<std::size_t>(lengths[i]);
      if (i + 1 < lengths.size()) {  // the last one of a store is cut to its share
        EXPECT_TRUE(real_lengths.contains(lengths[i])) << "length " << lengths[i];
      }
    }
  }
  EXPECT_EQ(tokens, 5000U);
}

TEST_F(PythonTokenStores, TheRecipeWritesASparseCorpusOfZerosWithTheRealLengthsAsInt32) {
  std::filesystem::create_directories(dir_ / "texts");
  std::ofstream(dir_ / "texts" / "a.txt") << "a short text";
  std::ofstream(dir_ / "texts" / "b.txt") << "another text, a little longer than the first";
  run_python(STOKE_MAKE_CORPUS, "real '" + (dir_ / "real").string() + "' --source '" +
                                    (dir_ / "texts").string() +
                                    "' --tokenizer bytes --dtype int32");
  const stoke::TokenStore<std::int32_t> real(dir_ / "real");
  const std::set<std::int32_t> real_lengths(real.lengths().begin(), real.lengths().end());
  run_python(STOKE_MAKE_CORPUS, "synthetic '" + (dir_ / "sparse").string() + "' --lengths-from '" +
                                    (dir_ / "real").string() +
                                    "' --tokens 50000 --dtype int32 --sparse --seed 3");
  const stoke::TokenStore<std::int32_t> sparse(dir_ / "sparse" / "synthetic_00000");
  std::size_t tokens = 0;
  for (std::size_t i = 0; i < sparse.size(); ++i) {
    const auto document = sparse.get(i);
    tokens += document.size();
    if (i + 1 < sparse.size()) {  // the last one is cut to the count asked for
      EXPECT_TRUE(real_lengths.contains(static_cast<std::int32_t>(document.size())));
    }
    EXPECT_TRUE(std::all_of(document.begin(), document.end(), [](auto t) { return t == 0; }))
        << "document " << i;
  }
  EXPECT_EQ(tokens, 50000U);
  // The .bin is its full size, but a hole: no block of it is written.
  const auto bin = dir_ / "sparse" / "synthetic_00000.bin";
  struct stat status{};
  ASSERT_EQ(::stat(bin.c_str(), &status), 0);
  EXPECT_EQ(static_cast<std::size_t>(status.st_size), 50000U * sizeof(std::int32_t));
  EXPECT_LT(static_cast<std::size_t>(status.st_blocks) * 512, 50000U * sizeof(std::int32_t));
}

}  // namespace

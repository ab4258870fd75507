// Fuzzes the token store's index parser: TokenStore and ShardedTokenStore open a .idx made of
// the input beside a .bin of the size the input asks for (see fuzz_token_store_input.hpp), as
// the token type the header names, and read every sequence and document.
#include <stdlib.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <stoke/sequences/sharded_token_store.hpp>
#include <stoke/sequences/token_store.hpp>

#include "fuzz_input.hpp"
#include "fuzz_token_store_input.hpp"

namespace {

/// A directory of this process's own, holding the store `store.bin` + `store.idx`.
class ScratchStore {
 public:
  ScratchStore() {
    const char* dir = std::getenv("TMPDIR");
    std::string pattern = std::string(dir != nullptr ? dir : "/tmp") + "/stoke-fuzz-store-XXXXXX";
    if (::mkdtemp(pattern.data()) == nullptr) std::abort();
    dir_ = pattern;
  }
  ScratchStore(const ScratchStore&) = delete;
  ScratchStore& operator=(const ScratchStore&) = delete;
  ~ScratchStore() { std::filesystem::remove_all(dir_); }

  /// The store's prefix, its files holding `bin_size` counting bytes (written again only when
  /// the size changes) and `idx`.
  std::filesystem::path holding(std::size_t bin_size, const std::uint8_t* idx, std::size_t size) {
    if (bin_size != bin_size_) {
      std::vector<char> bin(bin_size);
      for (std::size_t i = 0; i < bin_size; ++i) bin[i] = static_cast<char>(i * 7 + 1);
      std::ofstream(dir_ / "store.bin", std::ios::binary | std::ios::trunc)
          .write(bin.data(), static_cast<std::streamsize>(bin.size()));
      bin_size_ = bin_size;
    }
    std::ofstream(dir_ / "store.idx", std::ios::binary | std::ios::trunc)
        .write(reinterpret_cast<const char*>(idx), static_cast<std::streamsize>(size));
    return dir_ / "store";
  }

 private:
  std::filesystem::path dir_;
  std::size_t bin_size_ = SIZE_MAX;  // none written yet
};

/// Opens the store as `T` both ways and reads every token; aborts where the two disagree.
template <class T>
void read_store(const std::filesystem::path& prefix) {
  const stoke::TokenStore<T> store(prefix);
  const stoke::ShardedTokenStore<T> sharded(std::vector{prefix}, {.io_threads = 0});
  if (sharded.size() != store.size()) std::abort();
  double sum = 0;  // of every token read (a sum of integers could overflow)
  for (std::size_t i = 0; i < store.size(); ++i) {
    const auto tokens = store.get(i);
    const auto row = sharded.get(i);
    if (row.values.size() != tokens.size() ||
        static_cast<std::int32_t>(tokens.size()) != store.lengths()[i]) {
      std::abort();
    }
    for (const T token : tokens) sum += static_cast<double>(token);
  }
  for (std::size_t j = 0; j < store.document_count(); ++j) {
    for (const T token : store.document(j)) sum += static_cast<double>(token);
  }
  volatile double read = sum;  // every token is read
  (void)read;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 4) return 0;
  static ScratchStore scratch;
  std::uint32_t bin_size = 0;
  std::memcpy(&bin_size, data, 4);
  const auto prefix =
      scratch.holding(bin_size % (stoke::fuzz::max_bin_bytes + 1), data + 4, size - 4);
  const std::uint8_t code = size > 4 + stoke::TokenIndexHeader::dtype_offset
                                ? data[4 + stoke::TokenIndexHeader::dtype_offset]
                                : 0;
  stoke::fuzz::refuse_only_with_input_error([&] {
    switch (stoke::megatron_dtype(code).value_or(stoke::DType::boolean)) {
      case stoke::DType::u8:
        return read_store<std::uint8_t>(prefix);
      case stoke::DType::i8:
        return read_store<std::int8_t>(prefix);
      case stoke::DType::i16:
        return read_store<std::int16_t>(prefix);
      case stoke::DType::u16:
        return read_store<std::uint16_t>(prefix);
      case stoke::DType::i64:
        return read_store<std::int64_t>(prefix);
      case stoke::DType::f32:
        return read_store<float>(prefix);
      case stoke::DType::f64:
        return read_store<double>(prefix);
      default:
        return read_store<std::int32_t>(prefix);  // also an unknown code, which it refuses
    }
  });
  return 0;
}

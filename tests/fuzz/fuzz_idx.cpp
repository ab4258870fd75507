// Fuzzes read_idx: plain and gzip-compressed IDX files (the content decides which).
#include <cstddef>
#include <cstdint>

#include <stoke/data/sources/idx.hpp>

#include "fuzz_input.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static stoke::fuzz::ScratchFile file;
  const auto& path = file.holding(data, size);
  stoke::fuzz::refuse_only_with_input_error([&] {
    const stoke::IdxArray array = stoke::read_idx(path);
    std::size_t product = 1;
    for (const std::size_t extent : array.dims()) product *= extent;
    if (product != array.data().size()) std::abort();  // accepted, but not what it declares
  });
  return 0;
}

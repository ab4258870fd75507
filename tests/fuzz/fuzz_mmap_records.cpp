// Fuzzes MmapRecordDataset: the first byte is the record size, the rest the file.
#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include <stoke/data/sources/mmap_records.hpp>

#include "fuzz_input.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  static stoke::fuzz::ScratchFile file;
  const std::size_t record_size = data[0];
  const auto& path = file.holding(data + 1, size - 1);
  stoke::fuzz::refuse_only_with_input_error([&] {
    const stoke::MmapRecordDataset records(path, record_size);
    if (records.size() * records.record_size() != size - 1) std::abort();
    unsigned sum = 0;
    for (std::size_t i = 0; i < records.size(); ++i) {
      for (const std::byte byte : records.get(i)) sum += std::to_integer<unsigned>(byte);
    }
    (void)sum;
  });
  return 0;
}

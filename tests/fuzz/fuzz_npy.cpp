// Fuzzes the .npy reader: read_npy_info, load_npy and NpyDataset on the input as a file.
#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include <stoke/data/sources/npy.hpp>

#include "fuzz_array.hpp"
#include "fuzz_input.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static stoke::fuzz::ScratchFile file;
  const auto& path = file.holding(data, size);
  stoke::fuzz::refuse_only_with_input_error([&] {
    const stoke::ArrayInfo info = stoke::read_npy_info(path);
    const stoke::ArrayShard shard = stoke::load_npy(path);
    if (shard.info() != info) std::abort();  // the header read twice, two answers
    stoke::fuzz::read_every_value(shard);
    if (info.dtype == stoke::DType::f32) {
      const stoke::NpyDataset<float> rows(path);
      for (std::size_t i = 0; i < rows.size(); ++i) {
        if (rows.get(i).values.size() != info.row_elements()) std::abort();
      }
    }
  });
  return 0;
}

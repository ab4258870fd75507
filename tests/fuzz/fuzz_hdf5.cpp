// Fuzzes the HDF5 and NetCDF-4 reader: the input is the file; the variables "x" and "/g/x" (the
// seeds' names, see write_hdf5_fixtures.py --fuzz-seeds) are opened, checked, read whole when
// at most 16 MiB and, when float32, read as Hdf5Dataset rows by get and get_many; "missing"
// lists a level. libhdf5 itself is not built for fuzzing: its crashes show as they are.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <vector>

#include <stoke/data/sources/hdf5.hpp>

#include "fuzz_input.hpp"

namespace {

/// The most bytes a read may allocate: a small file may declare a huge (sparse) variable.
constexpr std::size_t max_read_bytes = std::size_t{16} << 20U;

/// Reads `variable` of `path` as stoke's users do, checking what the reader promises.
void read_variable(const std::filesystem::path& path, const char* variable) {
  const stoke::Hdf5Variable opened(path, variable);
  const stoke::ArrayInfo& info = opened.info();
  if (info.shape.empty()) std::abort();  // rank 0 is refused
  const std::size_t row_bytes = info.row_bytes();
  if (row_bytes > max_read_bytes) return;
  const std::size_t rows = info.rows();
  if (rows != 0 && rows <= max_read_bytes / std::max<std::size_t>(row_bytes, 1)) {
    const stoke::ArrayShard shard = opened.load();
    if (shard.bytes().size() != rows * row_bytes || shard.info() != info) std::abort();
  }
  if (rows == 0 || info.dtype != stoke::DType::f32) return;
  const stoke::Hdf5Dataset<float> dataset(
      std::make_shared<const stoke::Hdf5Variable>(path, variable));
  const std::vector<std::size_t> indices = {rows - 1, 0, rows / 2, 0};
  std::vector<stoke::ArrayRow<float>> out;
  dataset.get_many(indices, out);
  if (out.size() != indices.size()) std::abort();
  for (std::size_t k = 0; k < indices.size(); ++k) {
    if (out[k].values.size() != info.row_elements()) std::abort();
  }
  (void)dataset.get(rows - 1);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static stoke::fuzz::ScratchFile file;
  const auto& path = file.holding(data, size);
  for (const char* variable : {"x", "/g/x", "missing"}) {
    stoke::fuzz::refuse_only_with_input_error([&] { read_variable(path, variable); });
  }
  return 0;
}

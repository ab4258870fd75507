// Fuzzes load_safetensors and reading every tensor's values as its dtype.
#include <cstddef>
#include <cstdint>
#include <string>

#include <stoke/learner/io/safetensors.hpp>

#include "fuzz_input.hpp"

namespace {

/// Reads tensor `name` of `file` as the C++ type of its dtype.
void read_values(const stoke::SafetensorsFile& file, const std::string& name) {
  const std::string& dtype = file.tensor(name).dtype;
  if (dtype == "F32") (void)file.values<float>(name);
  if (dtype == "F64") (void)file.values<double>(name);
  if (dtype == "I64") (void)file.values<std::int64_t>(name);
  if (dtype == "U8") (void)file.values<std::uint8_t>(name);
  if (dtype == "BOOL") (void)file.values<bool>(name);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static stoke::fuzz::ScratchFile file;
  const auto& path = file.holding(data, size);
  stoke::fuzz::refuse_only_with_input_error([&] {
    const stoke::SafetensorsFile tensors = stoke::load_safetensors(path);
    for (const auto& name : tensors.names()) read_values(tensors, name);
    (void)tensors.metadata();
  });
  return 0;
}

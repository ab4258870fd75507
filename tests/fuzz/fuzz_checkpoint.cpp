// Fuzzes load_checkpoint (the safetensors file, its checksum and its "training" metadata)
// for a model of 3 parameters without names.
#include <cstddef>
#include <cstdint>

#include <stoke/learner/checkpoint.hpp>

#include "fuzz_input.hpp"
#include "fuzz_seed_model.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static stoke::fuzz::ScratchFile file;
  const auto& path = file.holding(data, size);
  stoke::fuzz::refuse_only_with_input_error([&] {
    (void)stoke::load_checkpoint(path, stoke::fuzz::SeedModel{}, stoke::fuzz::seed_parameters);
  });
  return 0;
}

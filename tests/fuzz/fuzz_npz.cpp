// Fuzzes the .npz reader: npz_members and load_npz of every array (and of one that is not there)
// on the input as a file.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <stoke/data/sources/npz.hpp>

#include "fuzz_array.hpp"
#include "fuzz_input.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static stoke::fuzz::ScratchFile file;
  const auto& path = file.holding(data, size);
  std::vector<std::string> names;
  stoke::fuzz::refuse_only_with_input_error([&] { names = stoke::npz_members(path); });
  names.emplace_back("absent");
  for (std::size_t i = 0; i < names.size() && i < 8; ++i) {
    stoke::fuzz::refuse_only_with_input_error(
        [&] { stoke::fuzz::read_every_value(stoke::load_npz(path, names[i])); });
  }
  return 0;
}

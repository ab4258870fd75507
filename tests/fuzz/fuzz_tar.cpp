// Fuzzes the tar reader and TarShards: the input opened as a WebDataset tar shard, then every
// sample read (its key, its label, every byte of its image).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <numeric>
#include <vector>

#include <stoke/images/tar_shards.hpp>

#include "fuzz_input.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static stoke::fuzz::ScratchFile file;
  const auto& path = file.holding(data, size);
  stoke::fuzz::refuse_only_with_input_error([&] {
    const stoke::images::TarShards shards(std::vector{path});
    if (shards.size() == 0 || shards.shard_begins().front() != 0) std::abort();
    for (std::size_t i = 0; i < shards.size(); ++i) {
      const stoke::images::EncodedImage image = shards.get(i);
      if (image.bytes.size() > size || shards.key(i).empty()) std::abort();
      if (image.label != shards.label(i)) std::abort();
      // Touch every byte: one outside the mapping would be caught here by ASan.
      static volatile unsigned sink = 0;
      sink = std::accumulate(image.bytes.begin(), image.bytes.end(), 0U);
    }
    const std::size_t first = 0;
    shards.read_ahead({&first, 1});
  });
  return 0;
}

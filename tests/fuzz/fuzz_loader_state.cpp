// Fuzzes parse_loader_state, then restoring the state into a loader and taking its batches.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <stoke/stoke.hpp>

#include "fuzz_input.hpp"
#include "fuzz_seed_model.hpp"

namespace {

/// Batches of dataset indices.
struct IndexBatcher {
  std::vector<std::size_t> batch(std::vector<std::size_t> items, const stoke::cpu::Device&) const {
    return items;
  }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  stoke::fuzz::refuse_only_with_input_error([&] {
    const stoke::LoaderState state = stoke::parse_loader_state(text);
    auto loader = stoke::DataLoaderBuilder<stoke::cpu::Backend, IndexBatcher>(IndexBatcher{})
                      .batch_size(4)
                      .shuffle(stoke::fuzz::seed_loader_seed)
                      .pad()
                      .build_batch_loader(stoke::fuzz::SeedDataset{});
    loader.restore(state);
    for (auto& batch : loader.iter()) {
      for (const std::size_t index : batch.indices) {
        if (index >= stoke::fuzz::seed_dataset_size) std::abort();
      }
    }
  });
  return 0;
}

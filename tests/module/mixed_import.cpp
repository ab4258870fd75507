// The half of stoke_module_mixed that does `import stoke;` (see mixed_include.cpp).
#include <cstddef>
#include <numeric>
#include <string>
#include <vector>

import stoke;

namespace mixed {
using Loader = stoke::MultiThreadLoader<stoke::InMemoryDataset<int>,
                                        stoke::cpu::StackBatcher<float>, stoke::cpu::Backend>;
}  // namespace mixed
#include "mixed.hpp"

namespace mixed {

Loader make_loader_in_module_unit(std::size_t count, std::size_t device) {
  std::vector<int> items(count);
  std::iota(items.begin(), items.end(), 0);
  return stoke::DataLoaderBuilder<stoke::cpu::Backend, stoke::cpu::StackBatcher<float>>({})
      .batch_size(4)
      .shuffle(3)
      .num_workers(2)
      .drop_last()
      .device(stoke::cpu::Device{device})
      .build(stoke::InMemoryDataset<int>(std::move(items)));
}

double sum_in_module_unit(Loader& loader, std::vector<std::size_t>& devices) {
  double sum = 0;
  for (const auto& batch : loader.iter()) {
    devices.push_back(batch.data.device().index);
    for (const float value : batch.data.values()) sum += value;
  }
  return sum;
}

void throw_input_error_in_module_unit(const std::string& message) {
  throw stoke::InputError(message);
}

}  // namespace mixed

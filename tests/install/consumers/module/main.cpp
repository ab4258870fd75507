// A consumer of the installed module: no stoke header, only `import stoke;`. Loads a dataset
// split over two CPU devices and checks every batch.
#include <cstdio>
#include <numeric>
#include <vector>

import stoke;

int main() {
  std::vector<int> values(40);
  std::iota(values.begin(), values.end(), 0);
  const stoke::InMemoryDataset<int> dataset(values);
  auto loader = stoke::DataLoaderBuilder<stoke::cpu::Backend, stoke::cpu::StackBatcher<float>>({})
                    .batch_size(4)
                    .shuffle(5)
                    .num_workers(2)
                    .drop_last()
                    .build(dataset | stoke::map([](int x) { return 10 * x; }));
  std::size_t batches = 0, bad = 0;
  for (auto part : stoke::split(loader, stoke::cpu::Backend::devices(2))) {
    for (const auto& batch : part.iter()) {
      ++batches;
      for (std::size_t row = 0; row < batch.size(); ++row) {
        if (batch.data.values()[row] != 10.0f * static_cast<float>(batch.indices[row])) ++bad;
      }
      if (batch.data.device() != part.device()) ++bad;
    }
  }
  std::printf("module consumer: %zu batches on 2 devices, %zu wrong\n", batches, bad);
  return batches == 10 && bad == 0 ? 0 : 1;
}

// Near miss of `Batcher`: the function is called `make`, not `batch`.
#include <vector>

#include <stoke/cpu/backend.hpp>
#include <stoke/data/builder.hpp>
#include <stoke/data/sources/in_memory.hpp>

struct SumBatcher {
  int make(std::vector<int> items, const stoke::cpu::Device&) const {
    int sum = 0;
    for (const int item : items) sum += item;
    return sum;
  }
#ifdef STOKE_NEAR_MISS_FIXED
  int batch(std::vector<int> items, const stoke::cpu::Device& device) const {
    return make(std::move(items), device);
  }
#endif
};

int main() {
  const stoke::InMemoryDataset<int> numbers(std::vector<int>{1, 2, 3, 4});
  auto loader =
      stoke::DataLoaderBuilder<stoke::cpu::Backend, SumBatcher>({}).batch_size(2).build(numbers);
  return static_cast<int>(loader.num_items()) - 4;
}

// The third TU of stoke_module_mixed: the headers first, then `import stoke;`. Headers that
// the module leaves out (the CUDA and Vulkan backends) are used this way next to the module;
// the declarations of both are one set of entities. (Including after the import is not
// supported by every compiler.)
#include <cstddef>
#include <string>
#include <vector>

#include <stoke/stoke.hpp>

import stoke;

namespace mixed {
using Loader = stoke::MultiThreadLoader<stoke::InMemoryDataset<int>,
                                        stoke::cpu::StackBatcher<float>, stoke::cpu::Backend>;
}  // namespace mixed
#include "mixed.hpp"

namespace mixed {

double sum_in_both_unit(Loader& loader) {
  double sum = 0;
  for (const stoke::Batch<stoke::cpu::Tensor<float>>& batch : loader.iter()) {
    for (const float value : batch.data.values()) sum += value;
  }
  return sum;
}

}  // namespace mixed

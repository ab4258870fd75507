#pragma once
// The batches of a loader over `.npy` shards whose values count up from 0: what the stored-array
// tests compare between a local and a remote dataset.
#include <cstddef>
#include <utility>
#include <vector>

#include <stoke/data/sources/sharded_arrays.hpp>

#include "stoke_test_support.hpp"

namespace stoke_storage_test {

/// Every value of every row of the batch, as integers (the shards count up from 0).
struct AllValues {
  template <class Device>
  stoke::testing::ItemsBatch<Device> batch(std::vector<stoke::ArrayRow<float>> rows,
                                           const Device& device) const {
    std::vector<std::size_t> out;
    for (const auto& row : rows) {
      for (const float value : row.values) out.push_back(static_cast<std::size_t>(value));
    }
    return {std::move(out), device};
  }
};

/// The batches of `epochs` epochs of `arrays` (shards shuffled, two workers).
template <class Dataset>
std::vector<std::vector<std::size_t>> batches_of(const Dataset& arrays, int epochs) {
  auto loader = stoke::DataLoaderBuilder<stoke::cpu::Backend, AllValues>({})
                    .batch_size(8)
                    .shuffle_shards(5)
                    .num_workers(2)
                    .build(arrays);
  std::vector<std::vector<std::size_t>> batches;
  for (int epoch = 0; epoch < epochs; ++epoch) {
    for (auto& batch : loader.iter()) batches.push_back(batch.data.items);
  }
  return batches;
}

}  // namespace stoke_storage_test

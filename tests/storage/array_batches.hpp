#pragma once
// The batches of a loader over array shards (`.npy` and `.npz` shards whose values count up from
// 0, record files of bytes): what the stored-array tests compare between a local and a remote
// dataset.
#include <cstddef>
#include <utility>
#include <vector>

#include <stoke/data/sources/sharded_arrays.hpp>

#include "stoke_test_support.hpp"

namespace stoke_storage_test {

/// Every value of every row of the batch, as integers (float shards count up from 0).
template <class T = float>
struct AllValues {
  template <class Device>
  stoke::testing::ItemsBatch<Device> batch(std::vector<stoke::ArrayRow<T>> rows,
                                           const Device& device) const {
    std::vector<std::size_t> out;
    for (const auto& row : rows) {
      for (const T value : row.values) out.push_back(static_cast<std::size_t>(value));
    }
    return {std::move(out), device};
  }
};

/// The batches of `epochs` epochs of `arrays`, whose rows are `ArrayRow<T>` (shards shuffled,
/// two workers).
template <class T = float, class Dataset>
std::vector<std::vector<std::size_t>> batches_of(const Dataset& arrays, int epochs) {
  auto loader = stoke::DataLoaderBuilder<stoke::cpu::Backend, AllValues<T>>({})
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

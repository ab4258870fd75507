#pragma once
// `StackRows`, the batcher of the benchmarks over float32 array shards (shard_bench,
// storage_bench), and `stacked_loader`, their loader (over other batchers too).
#include <algorithm>
#include <cstddef>
#include <vector>

#include <stoke/stoke.hpp>

namespace stoke_bench {

/// Stacks a batch's rows into one float32 tensor [rows, row length], as PyTorch's default
/// collate does: the contiguous batch a model step takes.
struct StackRows {
  stoke::cpu::BufferPool pool{};

  stoke::cpu::Tensor<float> batch(std::vector<stoke::ArrayRow<float>> rows,
                                  const stoke::cpu::Device& device) const {
    const std::size_t length = rows.empty() ? 0 : rows.front().values.size();
    auto out = stoke::cpu::Tensor<float>::uninitialized({rows.size(), length}, device, pool);
    for (std::size_t i = 0; i < rows.size(); ++i) {
      std::ranges::copy(rows[i].values, out.row(i).begin());
    }
    return out;
  }
};

/// The benchmarks' loader over the sharded `data`: batches of `batch` rows stacked by `Batcher`,
/// padded, shards shuffled (seed 3), `workers` workers.
template <class Batcher = StackRows, class Data>
auto stacked_loader(const Data& data, std::size_t batch, std::size_t workers) {
  return stoke::DataLoaderBuilder<stoke::cpu::Backend, Batcher>({})
      .batch_size(batch)
      .shuffle_shards(3)
      .num_workers(workers)
      .pad()
      .build(data);
}

}  // namespace stoke_bench

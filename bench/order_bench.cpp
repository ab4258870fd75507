// Positions and restore: what the epoch order costs per position for datasets of 1e3, 1e6
// and 1e9 samples (constant time, constant memory), and what restoring a 1e9-sample loader
// and making its first batch costs early and late in an epoch (constant: nothing is replayed).
#include <benchmark/benchmark.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include <stoke/stoke.hpp>

namespace {

/// Sample `i` is the number `i`: the benchmarks measure the loader, not the storage.
struct Numbers {
  std::size_t count = 0;
  [[nodiscard]] std::size_t size() const { return count; }
  [[nodiscard]] std::size_t get(std::size_t index) const { return index; }
};

/// Keeps a batch's samples as a list.
struct ListBatcher {
  std::vector<std::size_t> batch(std::vector<std::size_t> items, const stoke::cpu::Device&) const {
    return items;
  }
};

/// One position -> dataset index per iteration, walking all positions of the epoch in turn.
void order_position_to_index(benchmark::State& state) {
  const auto size = static_cast<std::size_t>(state.range(0));
  const stoke::EpochOrder order(size, 42, 3);
  std::size_t position = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(order(position));
    if (++position == size) position = 0;
  }
  state.SetItemsProcessed(state.iterations());
  state.counters["order_bytes"] = static_cast<double>(sizeof(order));
}
// 2^28 + 1 is a worst case: the network's domain (the smallest even power of two that holds
// the size, 2^30) is four times the size, so positions take four evaluations on average.
BENCHMARK(order_position_to_index)
    ->Arg(1'000)
    ->Arg(1'000'000)
    ->Arg(1'000'000'000)
    ->Arg(268'435'457);

/// `restore` of a state `consumed` positions into epoch 7 of a 1e9-sample loader (batch 256,
/// shuffled), then its first batch. With `devices` > 1 the loader is split after the restore
/// and the first batch is that of device 0.
void restore_and_first_batch(benchmark::State& state) {
  const auto consumed = static_cast<std::size_t>(state.range(0));
  const auto devices = static_cast<std::size_t>(state.range(1));
  const std::size_t size = 1'000'000'000;
  auto loader = stoke::DataLoaderBuilder<stoke::cpu::Backend, ListBatcher>({})
                    .batch_size(256)
                    .shuffle(42)
                    .pad()
                    .build_batch_loader(Numbers{size});
  stoke::LoaderState saved = loader.state();
  saved.epoch = 7;
  saved.consumed = consumed;
  for (auto _ : state) {
    loader.restore(saved);
    if (devices == 1) {
      auto range = loader.iter();
      benchmark::DoNotOptimize(range.begin()->indices.data());
    } else {
      auto parts = stoke::split(loader, stoke::cpu::Backend::devices(devices));
      auto range = parts.front().iter();
      benchmark::DoNotOptimize(range.begin()->indices.data());
    }
  }
  state.counters["consumed"] = static_cast<double>(consumed);
}
BENCHMARK(restore_and_first_batch)
    ->ArgNames({"consumed", "devices"})
    ->Args({0, 1})
    ->Args({1'000'000, 1})
    ->Args({999'000'000, 1})
    ->Args({0, 8})
    ->Args({999'000'000, 8})
    ->Unit(benchmark::kMicrosecond);

}  // namespace

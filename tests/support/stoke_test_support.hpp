#pragma once
/// @file
/// Small datasets and batchers shared by stoke's tests.

#include <atomic>
#include <cstddef>
#include <stdexcept>
#include <string>
#include <vector>

#include <stoke/stoke.hpp>

namespace stoke::testing {

/// Sample `i` is the number `i`.
struct IotaDataset {
  std::size_t count = 0;
  [[nodiscard]] std::size_t size() const { return count; }
  [[nodiscard]] std::size_t get(std::size_t index) const { return index; }
};

/// Sample `i` is `i`, except that reading `bad_index` throws.
struct FailingDataset {
  std::size_t count = 0;
  std::size_t bad_index = 0;
  [[nodiscard]] std::size_t size() const { return count; }
  [[nodiscard]] std::size_t get(std::size_t index) const {
    if (index == bad_index) throw std::runtime_error("cannot read sample " + std::to_string(index));
    return index;
  }
};

/// The batch is the list of samples and the device it was made for.
template <class Device = cpu::Device>
struct ItemsBatch {
  std::vector<std::size_t> items;
  Device device;
};

/// Keeps the samples as they are, and records the device.
struct ItemsBatcher {
  template <class Device>
  ItemsBatch<Device> batch(std::vector<std::size_t> items, const Device& device) const {
    return {std::move(items), device};
  }
};

/// A builder of loaders over the CPU backend whose batches are their samples' indices.
inline auto items_builder() {
  return stoke::DataLoaderBuilder<stoke::cpu::Backend, ItemsBatcher>(ItemsBatcher{});
}

/// All samples of every batch of one epoch of `loader`, in delivery order.
template <class Loader>
std::vector<std::size_t> epoch_items(Loader& loader) {
  std::vector<std::size_t> out;
  for (auto& batch : loader.iter()) {
    out.insert(out.end(), batch.data.items.begin(), batch.data.items.end());
  }
  return out;
}

/// The number of threads of this process, from /proc/self/status.
std::size_t thread_count();

/// The thread count once runtime helpers that start with the first thread (ThreadSanitizer's
/// background thread) exist: spawns and joins one thread, then counts.
std::size_t baseline_thread_count();

}  // namespace stoke::testing

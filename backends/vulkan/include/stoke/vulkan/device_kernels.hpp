#pragma once
/// @file
/// `kernels_of`: one set of compute pipelines a device (the training shaders every model uses,
/// one model's own), made on first use and kept for the life of the process.

#include <memory>
#include <mutex>
#include <unordered_map>
#include <utility>

#include <stoke/vulkan/context.hpp>
#include <stoke/vulkan/device.hpp>
#include <stoke/vulkan/registry.hpp>

namespace stoke::vulkan {

/// The `Kernels` of `device`, made from the device's context on first use (`Kernels` is
/// constructible from a `std::shared_ptr<Context>`) and kept for the life of the process, like
/// the context itself (see `detail::Registry`): never destroyed, so no pipeline outlives its
/// device at exit. Thread-safe.
template <class Kernels>
Kernels& kernels_of(const Device& device) {
  std::shared_ptr<Context> made = vulkan::context(device);  // the registry outlives every kernel
  static std::mutex mutex;
  static auto* kernels = new std::unordered_map<Device, std::unique_ptr<Kernels>>();
  const std::lock_guard lock(mutex);
  auto& slot = (*kernels)[device];
  if (!slot) slot = std::make_unique<Kernels>(std::move(made));
  return *slot;
}

}  // namespace stoke::vulkan

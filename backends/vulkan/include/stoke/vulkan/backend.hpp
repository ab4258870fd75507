#pragma once
/// @file
/// `vulkan::Backend`: the Vulkan backend, a `stoke::StagingBackend`,
/// `stoke::CollectiveBackend` and `stoke::DeviceBackend` whose devices are logical
/// `VkDevice`s.

#include <cstddef>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <stoke/vulkan/buffer.hpp>
#include <stoke/vulkan/collective.hpp>
#include <stoke/vulkan/device.hpp>
#include <stoke/vulkan/fence.hpp>
#include <stoke/vulkan/registry.hpp>
#include <stoke/vulkan/stager.hpp>
#include <stoke/vulkan/training.hpp>

namespace stoke::vulkan {

/// The Vulkan backend. Each device is one `VkDevice` with one queue; several may run on one
/// physical device (see `visible_device_count`). Uploads go through `Stager`s, fenced by the
/// queue's timeline semaphore; all_reduce is staged through host memory. Models train in
/// device memory through the shaders of `training.hpp` (`training::Operations`, the
/// `stoke::DeviceBackend` members it derives).
struct Backend : training::Operations {
  using Device = vulkan::Device;                    ///< `vulkan:N`
  using Buffer = vulkan::Buffer;                    ///< device memory
  using Fence = vulkan::Fence;                      ///< a timeline semaphore value
  using Stager = vulkan::Stager;                    ///< uploads through staging buffers
  using Collective = vulkan::HostStagedCollective;  ///< all_reduce through host memory
  using Tensor = vulkan::Buffer;                    ///< floats in device memory

  /// `"vulkan"`.
  static constexpr std::string_view name() noexcept { return "vulkan"; }

  /// The visible devices `vulkan:0 .. vulkan:N-1` (`N` from `visible_device_count`);
  /// none when Vulkan is unusable here (`unavailable_reason` says why).
  static std::vector<Device> devices() { return devices(visible_device_count()); }

  /// The first `count` devices (lanes where there are fewer physical ones), or none when Vulkan is
  /// unusable here.
  static std::vector<Device> devices(std::size_t count) {
    if (detail::Registry::get().physical_devices().empty()) return {};
    std::vector<Device> out(count);
    for (std::size_t i = 0; i < count; ++i) out[i].index = i;
    return out;
  }

  /// Why no device is visible (empty when one is).
  static std::string unavailable_reason() { return vulkan::unavailable_reason(); }

  /// A stager for `device` with at most `slots` staging buffers.
  static std::unique_ptr<Stager> make_stager(const Device& device, std::size_t slots) {
    return std::make_unique<Stager>(context(device), slots);
  }

  /// An all_reduce among `devices` (one thread each).
  static std::unique_ptr<Collective> make_collective(const std::vector<Device>& devices) {
    return std::make_unique<Collective>(devices);
  }
};

}  // namespace stoke::vulkan

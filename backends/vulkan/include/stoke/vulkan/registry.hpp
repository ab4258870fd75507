#pragma once
/// @file
/// Which Vulkan devices are visible, and `vulkan::context(device)`: the one `Context` (one
/// `VkDevice` and queue) of each stoke device, created on first use.

#include <cstddef>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include <stoke/core/device.hpp>
#include <stoke/core/env.hpp>
#include <stoke/core/error.hpp>
#include <stoke/vulkan/context.hpp>
#include <stoke/vulkan/device.hpp>
#include <stoke/vulkan/instance.hpp>
#include <stoke/vulkan/logical_device.hpp>

namespace stoke::vulkan::detail {

/// The usable physical devices and the context of every stoke device made so far.
class Registry {
 public:
  /// The process-wide registry (creates the instance on first use). It is never destroyed:
  /// tearing a `VkDevice` down during exit raced with lavapipe's queue thread under the
  /// validation layer (a crash in one run of ten), so devices live until the process ends
  /// and the driver's own exit handlers stop its threads.
  static Registry& get() {
    static Registry* registry = new Registry();
    return *registry;
  }
  Registry(const Registry&) = delete;
  Registry& operator=(const Registry&) = delete;

  /// The physical devices stoke can use, in the loader's order.
  [[nodiscard]] const std::vector<PhysicalDevice>& physical_devices() const noexcept {
    return physical_;
  }
  /// The Vulkan instance (null when there is none).
  [[nodiscard]] const std::shared_ptr<const Instance>& instance() const noexcept {
    return instance_;
  }
  /// Why no physical device is usable (empty when one is).
  [[nodiscard]] const std::string& unavailable_reason() const noexcept { return reason_; }

  /// The context of `device`: device `k` is lane `k / P` of physical device `k % P`.
  std::shared_ptr<Context> context(const Device& device) {
    if (physical_.empty()) throw Error("stoke: vulkan: no usable device: " + reason_);
    std::lock_guard lock(mutex_);
    auto& slot = contexts_[device.index];
    if (!slot) {
      auto logical = std::make_shared<const LogicalDevice>(
          instance_, physical_[device.index % physical_.size()]);
      slot = std::make_shared<Context>(device, std::move(logical));
    }
    return slot;
  }

 private:
  Registry() {
    const InstanceSlot& slot = shared_instance();
    instance_ = slot.instance;
    if (!instance_) {
      reason_ = "no Vulkan instance: " + slot.error;
      return;
    }
    std::vector<VkPhysicalDevice> handles;
    try {
      handles = instance_->physical_devices();
    } catch (const std::exception& error) {
      reason_ = error.what();
      return;
    }
    std::string why_not;
    for (VkPhysicalDevice handle : handles) {
      std::string reason;
      if (auto device = inspect(handle, reason)) {
        physical_.push_back(*device);
      } else {
        why_not += (why_not.empty() ? "" : "; ") + reason;
      }
    }
    if (physical_.empty()) {
      reason_ = handles.empty() ? "the Vulkan loader found no physical device"
                                : "no physical device is usable: " + why_not;
    }
  }

  std::shared_ptr<const Instance> instance_;
  std::vector<PhysicalDevice> physical_;
  std::string reason_;
  std::mutex mutex_;
  std::unordered_map<std::size_t, std::shared_ptr<Context>> contexts_;
};

}  // namespace stoke::vulkan::detail

namespace stoke::vulkan {

/// How many devices are visible: `STOKE_VULKAN_DEVICES` if set, else one per usable
/// physical device, or 2 when there is exactly one (so multi-device code runs everywhere);
/// 0 when Vulkan is unusable here. A `STOKE_VULKAN_DEVICES` that is not a count is an
/// `InputError`.
[[nodiscard]] inline std::size_t visible_device_count() {
  const std::size_t physical = detail::Registry::get().physical_devices().size();
  if (physical == 0) return 0;
  if (const auto env = stoke::env_count("STOKE_VULKAN_DEVICES")) return *env;
  return physical == 1 ? 2 : physical;
}

/// Why no Vulkan device is visible (empty when one is).
[[nodiscard]] inline std::string unavailable_reason() {
  return detail::Registry::get().unavailable_reason();
}

/// The context of `device`, created on first use; throws `stoke::Error` without Vulkan.
[[nodiscard]] inline std::shared_ptr<Context> context(const Device& device) {
  return detail::Registry::get().context(device);
}

}  // namespace stoke::vulkan

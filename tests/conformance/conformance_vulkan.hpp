#pragma once
/// @file
/// Conformance hooks of the Vulkan backend: validation layer on, skipped without a device.

#include <cstddef>
#include <string>
#include <vector>

#include <stoke/vulkan.hpp>

#include "conformance_traits.hpp"
#include "vulkan_validation.hpp"

namespace stoke::testing {

template <>
struct ConformanceTraits<vulkan::Backend> {
  /// The batches a device-resident model reads.
  using ImageBatch = vulkan::ImageBatch;
  /// How far an Adam step may stray from the host's: Vulkan allows 2.5 ULP for a division and
  /// more for a square root, where IEEE gives the host 0.5.
  static constexpr float adam_relative_error = 1e-6f;
  static std::vector<vulkan::Device> devices(std::size_t count) {
    return vulkan::Backend::devices(count);
  }
  static std::string skip_reason() {
    std::string reason = vulkan_skip_reason();
    if (!reason.empty()) {
      for (const std::string& message : take_vulkan_messages()) reason += "; " + message;
    }
    return reason;
  }
  static void set_up() {
    enable_vulkan_validation();
    expect_no_vulkan_messages();
  }
  static void tear_down() { expect_no_vulkan_messages(); }
  static bool uploaded(const vulkan::Buffer& buffer) { return buffer.written().ready(); }
};

}  // namespace stoke::testing

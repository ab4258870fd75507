#pragma once
/// @file
/// Test support for the Vulkan suites: the Khronos validation layer on (with synchronization
/// validation), every warning and error it reports recorded, and a fixture that fails a test
/// during which one was reported and skips where no Vulkan device exists.

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace stoke::testing {

/// Turns on `VK_LAYER_KHRONOS_validation` for this process and records what it reports.
/// Call before the process's first Vulkan use (the fixtures do); later calls do nothing.
void enable_vulkan_validation();

/// The messages recorded since the last call (`"<id>: <text>"`), and forgets them.
std::vector<std::string> take_vulkan_messages();

/// Adds a test failure naming every message recorded since the last check.
void expect_no_vulkan_messages();

/// Why Vulkan tests cannot run here, or empty when a Vulkan device exists.
std::string vulkan_skip_reason();

/// Fixture of the Vulkan tests: validation on, skipped (saying why) without a Vulkan device,
/// failed when the validation layer reported a warning or an error during the test.
class VulkanTest : public ::testing::Test {
 protected:
  void SetUp() override;
  void TearDown() override;
};

}  // namespace stoke::testing

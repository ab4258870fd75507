// The Vulkan backend: concepts it models, devices (lanes of one physical device), one VkDevice per
// stoke device (several on one physical device), device errors.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdlib>
#include <sstream>
#include <stdexcept>
#include <unordered_set>
#include <vector>

#include <stoke/stoke.hpp>
#include <stoke/vulkan.hpp>

#include "vulkan_validation.hpp"

namespace {

using stoke::testing::VulkanTest;
namespace vk = stoke::vulkan;

static_assert(stoke::Device<vk::Device>);
static_assert(stoke::Fence<vk::Fence>);
static_assert(stoke::StagingBackend<vk::Backend>);
static_assert(stoke::CollectiveBackend<vk::Backend>);
static_assert(stoke::Batcher<vk::ImageBatcher, vk::Backend, stoke::LabeledImage>);
static_assert(std::derived_from<vk::DeviceError, stoke::Error>);

TEST(VulkanDevice, PrintsAsVulkanColonIndexAndCanKeyAHashSet) {
  std::ostringstream out;
  out << vk::Device{3};
  EXPECT_EQ(out.str(), "vulkan:3");
  EXPECT_EQ(stoke::device_name(vk::Device{0}), "vulkan:0");
  const std::unordered_set<vk::Device> set{{0}, {1}, {1}};
  EXPECT_EQ(set.size(), 2u);
  EXPECT_EQ(vk::Backend::name(), "vulkan");
}

TEST(VulkanDeviceError, CarriesTheResultAndTheCallSite) {
  const int line = __LINE__ + 2;
  try {
    STOKE_VK_CHECK(VK_ERROR_DEVICE_LOST);
    FAIL() << "expected a DeviceError";
  } catch (const stoke::Error& error) {  // caught as the stoke base
    const auto* device_error = dynamic_cast<const vk::DeviceError*>(&error);
    ASSERT_NE(device_error, nullptr);
    EXPECT_EQ(device_error->result(), VK_ERROR_DEVICE_LOST);
    EXPECT_EQ(error.where().line(), static_cast<unsigned>(line));
    EXPECT_THAT(error.where().file_name(), ::testing::EndsWith("test_vulkan_backend.cpp"));
    EXPECT_THAT(error.what(), ::testing::HasSubstr("VK_ERROR_DEVICE_LOST"));
    EXPECT_THAT(error.what(), ::testing::HasSubstr("(-4)"));
  }
  EXPECT_EQ(STOKE_VK_CHECK(VK_TIMEOUT), VK_TIMEOUT);  // not an error: returned to the caller
}

using VulkanBackend = VulkanTest;

TEST_F(VulkanBackend, ListsTwoLogicalDevicesWhenThereIsOnePhysicalDevice) {
  if (std::getenv("STOKE_VULKAN_DEVICES") != nullptr) GTEST_SKIP() << "STOKE_VULKAN_DEVICES is set";
  const std::size_t physical = vk::detail::Registry::get().physical_devices().size();
  const auto devices = vk::Backend::devices();
  EXPECT_EQ(devices.size(), physical == 1 ? 2u : physical);
  for (std::size_t i = 0; i < devices.size(); ++i) EXPECT_EQ(devices[i], vk::Device{i});
}

TEST_F(VulkanBackend, GivesEveryDeviceItsOwnVkDeviceEvenOnOnePhysicalDevice) {
  const auto a = vk::context(vk::Device{0});
  const auto b = vk::context(vk::Device{1});
  EXPECT_EQ(vk::context(vk::Device{0}), a) << "one context per device, made once";
  EXPECT_NE(a->handle(), b->handle());
  if (vk::detail::Registry::get().physical_devices().size() == 1) {
    EXPECT_EQ(a->logical_device()->physical().handle, b->logical_device()->physical().handle);
  }
  EXPECT_EQ(a->device(), vk::Device{0});
  EXPECT_EQ(b->device(), vk::Device{1});
}

TEST_F(VulkanBackend, UploadsOnTwoVkDevicesOfOnePhysicalDeviceStayApart) {
  const auto zero = vk::Backend::make_stager(vk::Device{0}, 2);
  const auto one = vk::Backend::make_stager(vk::Device{1}, 2);
  const std::vector<std::byte> a(1000, std::byte{0xA0});
  const std::vector<std::byte> b(1000, std::byte{0xB1});
  auto on_zero = zero->upload(a);
  auto on_one = one->upload(b);
  EXPECT_EQ(on_zero.value.device(), vk::Device{0});
  EXPECT_EQ(on_one.value.device(), vk::Device{1});
  EXPECT_EQ(zero->download(on_zero.value), a);
  EXPECT_EQ(one->download(on_one.value), b);
}

TEST_F(VulkanBackend, RefusesToMixDevices) {
  const auto zero = vk::Backend::make_stager(vk::Device{0}, 1);
  const auto one = vk::Backend::make_stager(vk::Device{1}, 1);
  const std::vector<std::byte> bytes(16, std::byte{1});
  auto on_zero = zero->upload(bytes);
  EXPECT_THROW((void)one->download(on_zero.value), stoke::UsageError);
  EXPECT_THROW((void)one->upload(bytes, std::span(&on_zero.fence, 1)), stoke::UsageError);
  on_zero.fence.wait();
}

TEST_F(VulkanBackend, RecyclesCommandBuffers) {
  const auto stager = vk::Backend::make_stager(vk::Device{0}, 1);
  const std::vector<std::byte> bytes(64, std::byte{7});
  for (int i = 0; i < 50; ++i) stager->upload(bytes).fence.wait();
  EXPECT_LE(vk::context(vk::Device{0})->command_buffers(), 4u);
}

}  // namespace

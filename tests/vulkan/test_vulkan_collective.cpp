// vulkan::HostStagedCollective: all_reduce across 2 and 3 devices (download, a sum
// on the host in a fixed order, upload), one thread per device.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstddef>
#include <cstring>
#include <span>
#include <stdexcept>
#include <thread>
#include <vector>

#include <stoke/vulkan.hpp>

#include "vulkan_validation.hpp"

namespace {

namespace vk = stoke::vulkan;
using VulkanCollective = stoke::testing::VulkanTest;

std::vector<float> values_of(vk::Stager& stager, const vk::Buffer& buffer) {
  const auto bytes = stager.download(buffer);
  std::vector<float> values(bytes.size() / sizeof(float));
  std::memcpy(values.data(), bytes.data(), bytes.size());
  return values;
}

/// Device `k` holds `k + 1, 2(k + 1), ...`; after the all_reduce every device holds the sums.
void check_all_reduce(std::size_t count, std::size_t length) {
  const auto devices = vk::Backend::devices(count);
  ASSERT_EQ(devices.size(), count);
  const auto collective = vk::Backend::make_collective(devices);
  EXPECT_EQ(collective->size(), count);
  std::vector<std::vector<float>> results(count);
  std::vector<std::thread> threads;
  for (std::size_t k = 0; k < count; ++k) {
    threads.emplace_back([&, k] {
      const auto stager = vk::Backend::make_stager(devices[k], 1);
      std::vector<float> values(length);
      for (std::size_t i = 0; i < length; ++i) values[i] = static_cast<float>((k + 1) * (i + 1));
      auto upload = stager->upload(std::as_bytes(std::span(values)));
      collective->all_reduce_sum(k, upload.value);
      results[k] = values_of(*stager, upload.value);
      EXPECT_EQ(upload.value.device(), devices[k]);
    });
  }
  for (auto& thread : threads) thread.join();
  const float participants = static_cast<float>(count * (count + 1) / 2);
  for (std::size_t k = 0; k < count; ++k) {
    ASSERT_EQ(results[k].size(), length);
    for (std::size_t i = 0; i < length; ++i) {
      ASSERT_EQ(results[k][i], participants * static_cast<float>(i + 1)) << "device " << k;
    }
  }
}

TEST_F(VulkanCollective, SumsDeviceBuffersAcrossTwoDevices) {
  check_all_reduce(2, 1000);
}

TEST_F(VulkanCollective, SumsDeviceBuffersAcrossThreeDevices) {
  check_all_reduce(3, 4097);
}

TEST_F(VulkanCollective, SumsHostBuffersToo) {
  const auto collective = vk::Backend::make_collective(vk::Backend::devices(2));
  std::vector<float> a{1, 2, 3};
  std::vector<float> b{10, 20, 30};
  std::thread other([&] { collective->all_reduce_sum(1, std::span(b)); });
  collective->all_reduce_sum(0, std::span(a));
  other.join();
  EXPECT_THAT(a, ::testing::ElementsAre(11, 22, 33));
  EXPECT_EQ(a, b);
}

TEST_F(VulkanCollective, RefusesABufferOfAnotherDeviceAndReleasesTheOthers) {
  const auto devices = vk::Backend::devices(2);
  const auto collective = vk::Backend::make_collective(devices);
  const auto stager = vk::Backend::make_stager(devices[0], 1);
  const std::vector<float> values{1, 2};
  auto upload = stager->upload(std::as_bytes(std::span(values)));
  std::thread waiting([&] {
    std::vector<float> host{1, 2};
    EXPECT_THROW(collective->all_reduce_sum(0, std::span(host)), stoke::Error);
  });
  EXPECT_THROW(collective->all_reduce_sum(1, upload.value), stoke::UsageError);
  waiting.join();  // woken by the abort, not left hanging
}

}  // namespace

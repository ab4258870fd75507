// vulkan::AugmentingImageBatcher in loaders: the rows rendered to bytes on the host and flipped and
// normalised by the shader equal images::ImageBatcher's CPU batch bit for bit, in colour and
// grey, with colour jitter, and with bad samples replaced under the policy; the validation
// layer reports nothing.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include <stoke/images/encode.hpp>
#include <stoke/images/image_batcher.hpp>
#include <stoke/stoke.hpp>
#include <stoke/vulkan.hpp>
#include <stoke/vulkan/augmenting_image_batcher.hpp>

#include "device_batcher_checks.hpp"
#include "test_jpegs.hpp"
#include "vulkan_validation.hpp"

namespace {

using stoke::testing::cpu_batcher;
using stoke::testing::expect_equal_epochs;
using stoke::testing::floats_of;
using stoke::testing::same_settings_on;

namespace images = stoke::images;
namespace vk = stoke::vulkan;
using VulkanAugmentingImageBatcher = stoke::testing::VulkanTest;
using Dataset = stoke::InMemoryDataset<images::EncodedImage>;
using CpuBuilder = stoke::DataLoaderBuilder<stoke::cpu::Backend, images::ImageBatcher>;
using VulkanBuilder = stoke::DataLoaderBuilder<vk::Backend, vk::AugmentingImageBatcher>;

TEST_F(VulkanAugmentingImageBatcher, EqualsTheCpuBatchBitForBitWithFlipsAndColourJitter) {
  const auto items = stoke::testing::jpegs(23);
  for (const bool jitter : {false, true}) {
    const images::ImageBatcher cpu = cpu_batcher(jitter);
    auto on_cpu = CpuBuilder(cpu).batch_size(5).shuffle(5).build_batch_loader(Dataset(items));
    auto on_device = VulkanBuilder(same_settings_on<vk::AugmentingImageBatcher>(cpu))
                         .batch_size(5)
                         .shuffle(5)
                         .num_workers(2)
                         .build(Dataset(items));
    for (const std::size_t epoch : {0, 3}) {
      on_cpu.set_epoch(epoch);
      on_device.set_epoch(epoch);
      const std::string what = std::string(jitter ? "with" : "without") + " colour jitter, epoch " +
                               std::to_string(epoch);
      EXPECT_EQ(expect_equal_epochs<vk::Backend>(on_cpu, on_device, what), items.size()) << what;
    }
  }
}

TEST_F(VulkanAugmentingImageBatcher, EqualsTheCpuBatchBitForBitInGrey) {
  const auto items = stoke::testing::jpegs(11);
  for (const bool jitter : {false, true}) {
    const images::ImageBatcher cpu = cpu_batcher(jitter, 1);
    auto on_cpu = CpuBuilder(cpu).batch_size(4).shuffle(1).build_batch_loader(Dataset(items));
    auto on_device = VulkanBuilder(same_settings_on<vk::AugmentingImageBatcher>(cpu))
                         .batch_size(4)
                         .shuffle(1)
                         .build_batch_loader(Dataset(items));
    EXPECT_EQ(expect_equal_epochs<vk::Backend>(on_cpu, on_device, jitter ? "grey, jitter" : "grey"),
              items.size());
  }
}

TEST_F(VulkanAugmentingImageBatcher,
       ImagesOfTheOutputShapeDecodeStraightIntoStagingAndEqualTheCpu) {
  std::vector<images::EncodedImage> items;
  for (std::uint32_t i = 0; i < 9; ++i) {
    items.push_back(
        stoke::testing::encoded(images::encode_jpeg(stoke::testing::pattern(24, 20, i).view()),
                                "whole-" + std::to_string(i) + ".jpg", i % 10));
  }
  images::ImageBatcher cpu = cpu_batcher(false);
  cpu.augmentation = images::resize(24, 20) | images::horizontal_flip();
  auto on_cpu = CpuBuilder(cpu).batch_size(4).shuffle(2).build_batch_loader(Dataset(items));
  auto on_device = VulkanBuilder(same_settings_on<vk::AugmentingImageBatcher>(cpu))
                       .batch_size(4)
                       .shuffle(2)
                       .build_batch_loader(Dataset(items));
  EXPECT_EQ(expect_equal_epochs<vk::Backend>(on_cpu, on_device, "decoded straight"), items.size());
}

TEST_F(VulkanAugmentingImageBatcher, ABatchHasTheShapeOfTheCpuBatchOnTheDeviceItIsFor) {
  const auto items = stoke::testing::jpegs(6);
  const vk::AugmentingImageBatcher batcher =
      same_settings_on<vk::AugmentingImageBatcher>(cpu_batcher(false));
  const std::vector<std::size_t> indices{0, 1, 2, 3, 4, 5};
  const stoke::SampleContext context{.seed = 1, .epoch = 0, .indices = indices};
  const stoke::detail::SampleContextScope scope(context);
  for (const vk::Device device : vk::Backend::devices(2)) {
    const vk::ImageBatch batch = batcher.batch(items, device);
    EXPECT_EQ(batch.device(), device);
    EXPECT_EQ(batch.rows, 6U);
    EXPECT_EQ(batch.row_size, 3U * 24 * 20);
    EXPECT_EQ(batch.inputs.size(), 6U * 3 * 24 * 20 * sizeof(float));
    EXPECT_THAT(batch.labels, ::testing::ElementsAre(0, 1, 2, 3, 4, 5));
    batch.ready.wait();
    EXPECT_TRUE(batch.ready.ready());
    EXPECT_TRUE(batch.device_labels.written().ready()) << "ready covers the labels' upload";
    const auto labels = vk::Backend::make_stager(device, 1)->download(batch.device_labels);
    std::vector<std::int32_t> on_device(labels.size() / sizeof(std::int32_t));
    std::memcpy(on_device.data(), labels.data(), labels.size());
    EXPECT_THAT(on_device, ::testing::ElementsAre(0, 1, 2, 3, 4, 5));
  }
  const auto empty = batcher.batch({}, vk::Device{0});
  empty.ready.wait();
  EXPECT_EQ(empty.rows, 0U);
  EXPECT_EQ(empty.inputs.size(), 0U);
}

TEST_F(VulkanAugmentingImageBatcher, ABadSampleIsReplacedAsOnTheCpu) {
  auto items = stoke::testing::jpegs(12);
  items[2] = stoke::testing::truncated(items[2], "bad-2.jpg");
  items[3] = stoke::testing::truncated(items[3], "bad-3.jpg");
  items[3].label = 9;
  images::ImageBatcher cpu = cpu_batcher(true);
  cpu.bad_samples.max_per_epoch = 2;
  const vk::AugmentingImageBatcher gpu = same_settings_on<vk::AugmentingImageBatcher>(cpu);
  auto on_cpu = CpuBuilder(cpu).batch_size(6).build_batch_loader(Dataset(items));
  auto on_device = VulkanBuilder(gpu).batch_size(6).build_batch_loader(Dataset(items));
  EXPECT_EQ(expect_equal_epochs<vk::Backend>(on_cpu, on_device, "bad samples"), items.size());
  EXPECT_EQ(gpu.log->count(0), 2U);
  const auto logged = gpu.log->samples();
  ASSERT_EQ(logged.size(), 2U);
  EXPECT_EQ(logged[0].index, 2U);
  EXPECT_EQ(logged[0].source, "bad-2.jpg");
  EXPECT_EQ(logged[0].replacement, 4U);
  EXPECT_EQ(logged[1].index, 3U);
  EXPECT_EQ(logged[1].replacement, 4U);
}

TEST_F(VulkanAugmentingImageBatcher, ABadSampleWithoutAPolicyEndsTheRunNamingIt) {
  auto items = stoke::testing::jpegs(6);
  items[4] = stoke::testing::truncated(items[4], "broken-4.jpg");
  auto loader = VulkanBuilder(same_settings_on<vk::AugmentingImageBatcher>(cpu_batcher(false)))
                    .batch_size(3)
                    .build_batch_loader(Dataset(items));
  EXPECT_THAT(
      [&] {
        for ([[maybe_unused]] auto& batch : loader.iter()) {
        }
      },
      ::testing::ThrowsMessage<stoke::DataError>(::testing::HasSubstr("broken-4.jpg")));
}

TEST_F(VulkanAugmentingImageBatcher, RefusesANormalisationOfOtherChannels) {
  vk::AugmentingImageBatcher batcher =
      same_settings_on<vk::AugmentingImageBatcher>(cpu_batcher(false));
  batcher.decoding.channels = 1;
  const std::vector<std::size_t> indices{0};
  const stoke::SampleContext context{.seed = 1, .epoch = 0, .indices = indices};
  const stoke::detail::SampleContextScope scope(context);
  EXPECT_THAT([&] { (void)batcher.batch(stoke::testing::jpegs(1), vk::Device{0}); },
              ::testing::ThrowsMessage<stoke::UsageError>(
                  ::testing::HasSubstr("vulkan::AugmentingImageBatcher")));
}

}  // namespace

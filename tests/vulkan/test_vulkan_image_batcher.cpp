// vulkan::ImageBatcher: bytes uploaded and normalised by the compute shader on the device
// the batch is for, equal to what cpu::ImageBatcher makes on the host.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <random>
#include <set>
#include <span>
#include <vector>

#include <stoke/stoke.hpp>
#include <stoke/vulkan.hpp>

#include "vulkan_validation.hpp"

namespace {

namespace vk = stoke::vulkan;
using VulkanImageBatcher = stoke::testing::VulkanTest;

/// `count` random images of `pixels` bytes with labels `i % 10`.
struct RandomImages {
  RandomImages(std::size_t count, std::size_t image_size)
      : pixels(count * image_size), width(image_size) {
    std::mt19937 random(7);
    for (auto& pixel : this->pixels) pixel = static_cast<std::uint8_t>(random());
  }
  std::vector<std::uint8_t> pixels;
  std::size_t width;
  [[nodiscard]] std::size_t size() const { return pixels.size() / width; }
  [[nodiscard]] stoke::LabeledImage get(std::size_t i) const {
    return {std::span(pixels).subspan(i * width, width), static_cast<std::uint32_t>(i % 10)};
  }
};

std::vector<float> floats_of(const vk::Buffer& buffer) {
  const auto bytes = vk::Backend::make_stager(buffer.device(), 1)->download(buffer);
  std::vector<float> values(bytes.size() / sizeof(float));
  std::memcpy(values.data(), bytes.data(), bytes.size());
  return values;
}

/// The int32 values of a buffer on a Vulkan device.
std::vector<std::int32_t> ints_of(const vk::Buffer& buffer) {
  const auto bytes = vk::Backend::make_stager(buffer.device(), 1)->download(buffer);
  std::vector<std::int32_t> values(bytes.size() / sizeof(std::int32_t));
  std::memcpy(values.data(), bytes.data(), bytes.size());
  return values;
}

TEST_F(VulkanImageBatcher, MakesWhatTheCpuImageBatcherMakes) {
  const RandomImages images(37, 28 * 28);
  std::vector<stoke::LabeledImage> items;
  for (std::size_t i = 0; i < images.size(); ++i) items.push_back(images.get(i));
  const float mean = 0.1307F;
  const float stddev = 0.3081F;

  const auto on_host = stoke::cpu::ImageBatcher{mean, stddev}.batch(items, {});
  const vk::ImageBatcher batcher(mean, stddev);
  const auto on_device = batcher.batch(items, vk::Device{1});
  EXPECT_EQ(on_device.device(), vk::Device{1});
  EXPECT_EQ(on_device.rows, 37u);
  EXPECT_EQ(on_device.row_size, 28u * 28u);
  EXPECT_EQ(on_device.inputs.size(), 37u * 28 * 28 * sizeof(float));
  EXPECT_THAT(on_device.labels, ::testing::ElementsAreArray(on_host.labels));
  EXPECT_EQ(on_device.device_labels.device(), vk::Device{1});
  EXPECT_THAT(ints_of(on_device.device_labels), ::testing::ElementsAreArray(on_host.labels));

  const std::vector<float> values = floats_of(on_device.inputs);
  const auto expected = on_host.inputs.values();
  ASSERT_EQ(values.size(), expected.size());
  // Vulkan allows 2.5 ulp for a division; near `mean` the subtraction cancels, so compare
  // against the scale of the result (|x| <= 1/std).
  std::size_t exact = 0;
  for (std::size_t i = 0; i < values.size(); ++i) {
    ASSERT_NEAR(values[i], expected[i], 4e-7F / stddev) << "pixel " << i;
    exact += values[i] == expected[i] ? 1 : 0;
  }
  RecordProperty("bit_identical_pixels", static_cast<int>(exact));
  RecordProperty("pixels", static_cast<int>(values.size()));
}

TEST_F(VulkanImageBatcher, HandsBackAFenceAndMakesEmptyBatches) {
  const vk::ImageBatcher batcher;
  const auto empty = batcher.batch({}, vk::Device{0});
  empty.ready.wait();
  EXPECT_EQ(empty.rows, 0u);
  EXPECT_EQ(empty.inputs.size(), 0u);

  const std::uint8_t pixels[] = {0, 51, 255};
  const auto batch = batcher.batch({{std::span(pixels), 4}}, vk::Device{0});
  batch.ready.wait();
  EXPECT_TRUE(batch.ready.ready());
  EXPECT_THAT(floats_of(batch.inputs),
              ::testing::Pointwise(::testing::FloatEq(), {0.0F, 0.2F, 1.0F}));
  EXPECT_THAT(batch.labels, ::testing::ElementsAre(4));
}

TEST_F(VulkanImageBatcher, RefusesWhatTheCpuBatcherRefuses) {
  const std::uint8_t a[] = {1, 2};
  const std::uint8_t b[] = {3};
  try {
    (void)vk::ImageBatcher().batch({{std::span(a), 0}, {std::span(b), 1}}, vk::Device{0});
    FAIL() << "expected an InputError";
  } catch (const stoke::InputError& error) {
    EXPECT_THAT(error.what(), ::testing::HasSubstr("item 1 of the batch has 1 pixels"));
  }
  EXPECT_THROW((void)vk::ImageBatcher(0.0F, 0.0F).batch({{std::span(a), 0}}, vk::Device{0}),
               stoke::InputError);
  EXPECT_THROW((void)vk::ImageBatcher().batch({{std::span(a), 1u << 31}}, vk::Device{0}),
               stoke::InputError);
}

TEST_F(VulkanImageBatcher, BatchesOnTheDeviceOfEachSplitShareFromWorkerThreads) {
  const RandomImages images(64, 100);
  auto loader =
      stoke::DataLoaderBuilder<vk::Backend, vk::ImageBatcher>(vk::ImageBatcher(0.5F, 0.25F))
          .batch_size(8)
          .num_workers(2)
          .shuffle(3)
          .drop_last()
          .build(images);
  const auto devices = vk::Backend::devices(2);
  auto parts = stoke::split(loader, devices);
  std::multiset<std::size_t> seen;
  for (std::size_t k = 0; k < parts.size(); ++k) {
    for (auto& batch : parts[k].iter()) {
      EXPECT_EQ(batch.data.device(), devices[k]);
      const auto values = floats_of(batch.data.inputs);
      ASSERT_EQ(values.size(), batch.size() * 100);
      for (std::size_t row = 0; row < batch.size(); ++row) {
        const auto pixels = images.get(batch.indices[row]).pixels;
        EXPECT_NEAR(values[row * 100 + 7], (pixels[7] / 255.0F - 0.5F) / 0.25F, 1e-5F);
      }
      seen.insert(batch.indices.begin(), batch.indices.end());
    }
  }
  EXPECT_EQ(seen.size(), 64u);
  EXPECT_EQ(std::set<std::size_t>(seen.begin(), seen.end()).size(), 64u);
}

}  // namespace

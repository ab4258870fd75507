// cuda::ImageBatcher: batches land on the device they are for, with
// the values the CPU backend computes.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include <stoke/cuda.hpp>
#include <stoke/stoke.hpp>

#include "cuda_skip.hpp"

namespace {

std::vector<float> to_floats(const std::vector<std::byte>& bytes) {
  std::vector<float> values(bytes.size() / sizeof(float));
  if (!bytes.empty()) std::memcpy(values.data(), bytes.data(), bytes.size());
  return values;
}

TEST(CudaImageBatcher, NormalisedValuesEqualTheCpuBatchersBitForBit) {
  STOKE_CUDA_REQUIRE_DEVICES(1);
  std::vector<std::vector<std::uint8_t>> pixels(5, std::vector<std::uint8_t>(256 * 3));
  std::vector<stoke::LabeledImage> items;
  for (std::size_t i = 0; i < pixels.size(); ++i) {
    for (std::size_t k = 0; k < pixels[i].size(); ++k)
      pixels[i][k] = static_cast<std::uint8_t>(k * (i + 1));
    items.push_back({pixels[i], static_cast<std::uint32_t>(i)});
  }
  const stoke::cpu::ImageBatcher cpu{.mean = 0.2860F, .std = 0.3530F};
  const stoke::cuda::ImageBatcher gpu(0.2860F, 0.3530F);
  const auto expected = cpu.batch(items, stoke::cpu::Device{});
  for (const auto& device : stoke::cuda::Backend::devices()) {
    const auto batch = gpu.batch(items, device);
    EXPECT_EQ(batch.device(), device);
    EXPECT_EQ(batch.rows, 5u);
    EXPECT_EQ(batch.row_size, 768u);
    batch.ready.wait();
    const auto values =
        to_floats(stoke::cuda::Backend::make_stager(device, 1)->download(batch.inputs));
    const auto want = expected.inputs.values();
    ASSERT_EQ(values.size(), want.size());
    for (std::size_t i = 0; i < values.size(); ++i) ASSERT_EQ(values[i], want[i]) << "at " << i;
    EXPECT_EQ(batch.labels, expected.labels);
    // The device labels (the first words of the one buffer labels and pixels were copied in).
    const auto label_bytes =
        stoke::cuda::Backend::make_stager(device, 1)->download(batch.device_labels);
    ASSERT_GE(label_bytes.size(), 5 * sizeof(std::int32_t));
    std::vector<std::int32_t> device_labels(5);
    std::memcpy(device_labels.data(), label_bytes.data(), 5 * sizeof(std::int32_t));
    EXPECT_EQ(device_labels, std::vector<std::int32_t>(batch.labels.begin(), batch.labels.end()));
  }
}

TEST(CudaImageBatcher, RefusesWhatTheCpuBatcherRefuses) {
  STOKE_CUDA_REQUIRE_DEVICES(1);
  const std::vector<std::uint8_t> a(4), b(5);
  const std::vector<stoke::LabeledImage> items{{a, 0}, {b, 1}};
  EXPECT_THROW((void)stoke::cuda::ImageBatcher().batch(items, stoke::cuda::Device{}),
               stoke::InputError);
  EXPECT_THROW((void)stoke::cuda::ImageBatcher(0.0F, 0.0F).batch({}, stoke::cuda::Device{}),
               stoke::InputError);
}

}  // namespace

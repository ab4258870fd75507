#pragma once
/// @file
/// What the tests of the device image batchers (Vulkan, CUDA) share: the CPU batcher they are
/// compared with, the same settings on a device batcher, and the bit-for-bit comparison of one
/// epoch of each.

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include <stoke/images/image_batcher.hpp>

namespace stoke::testing {

namespace images = stoke::images;

/// The CPU batcher: flips, per-channel normalisation, colour jitter when `jitter`, `channels`
/// 3 (RGB) or 1 (grey).
images::ImageBatcher cpu_batcher(bool jitter, std::uint32_t channels = 3) {
  images::Augmentation augmentation =
      images::random_resized_crop(24, 20) | images::horizontal_flip();
  if (jitter) augmentation = augmentation | images::color_jitter(0.4F, 0.4F, 0.4F);
  return {.augmentation = augmentation,
          .normalization = channels == 3 ? images::Normalization({0.485F, 0.456F, 0.406F},
                                                                 {0.229F, 0.224F, 0.225F})
                                         : images::Normalization(0.449F, 0.226F),
          .decoding = {.channels = channels, .reduced_decode = true}};
}

/// The device batcher `DeviceBatcher` with the same settings as `cpu`.
template <class DeviceBatcher>
DeviceBatcher same_settings_on(const images::ImageBatcher& cpu) {
  return {.augmentation = cpu.augmentation,
          .normalization = cpu.normalization,
          .decoding = cpu.decoding,
          .bad_samples = cpu.bad_samples};
}

/// The floats of `buffer`, a buffer of backend `B`, downloaded once its writes completed.
template <class B, class Buffer>
std::vector<float> floats_of(const Buffer& buffer) {
  const auto bytes = B::make_stager(buffer.device(), 1)->download(buffer);
  std::vector<float> values(bytes.size() / sizeof(float));
  if (!bytes.empty()) std::memcpy(values.data(), bytes.data(), bytes.size());
  return values;
}

/// Checks that one epoch of `gpu` equals that of `cpu` bit for bit (values, indices,
/// labels); returns the rows compared.
template <class B, class CpuLoader, class DeviceLoader>
std::size_t expect_equal_epochs(CpuLoader& cpu, DeviceLoader& gpu, const std::string& what) {
  std::vector<std::vector<float>> want;
  std::vector<std::vector<std::int32_t>> want_labels;
  std::vector<std::vector<std::size_t>> want_indices;
  for (auto& batch : cpu.iter()) {
    const auto values = batch.data.inputs.values();
    want.emplace_back(values.begin(), values.end());
    want_labels.push_back(batch.data.labels);
    want_indices.emplace_back(batch.indices.begin(), batch.indices.end());
  }
  std::size_t step = 0;
  std::size_t rows = 0;
  for (auto& batch : gpu.iter()) {
    EXPECT_LT(step, want.size()) << what;
    if (step >= want.size()) break;
    const auto& made = batch.data;
    EXPECT_EQ(made.rows, batch.size()) << what;
    EXPECT_EQ(std::vector<std::size_t>(batch.indices.begin(), batch.indices.end()),
              want_indices[step])
        << what << ", step " << step;
    EXPECT_EQ(made.labels, want_labels[step]) << what << ", step " << step;
    const std::vector<float> values = floats_of<B>(made.inputs);
    EXPECT_EQ(values.size(), want[step].size()) << what << ", step " << step;
    EXPECT_EQ(made.rows * made.row_size, want[step].size()) << what << ", step " << step;
    if (values.size() == want[step].size()) {
      EXPECT_EQ(std::memcmp(values.data(), want[step].data(), values.size() * sizeof(float)), 0)
          << what << ", step " << step;
    }
    rows += made.rows;
    ++step;
  }
  EXPECT_EQ(step, want.size()) << what;
  return rows;
}

}  // namespace stoke::testing

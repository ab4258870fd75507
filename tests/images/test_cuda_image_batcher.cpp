// cuda::AugmentingImageBatcher in loaders: the rows rendered to bytes on the host and flipped and
// normalised by the kernel equal images::ImageBatcher's CPU batch bit for bit, in colour and
// grey, with colour jitter, and with bad samples replaced under the policy. Skipped, saying
// why, without a CUDA device.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include <stoke/cuda.hpp>
#include <stoke/cuda/augmenting_image_batcher.hpp>
#include <stoke/images/image_batcher.hpp>
#include <stoke/stoke.hpp>

#include "cuda_skip.hpp"
#include "device_batcher_checks.hpp"
#include "test_jpegs.hpp"

namespace {

using stoke::testing::cpu_batcher;
using stoke::testing::expect_equal_epochs;
using stoke::testing::floats_of;
using stoke::testing::same_settings_on;

namespace images = stoke::images;
namespace cu = stoke::cuda;
using Dataset = stoke::InMemoryDataset<images::EncodedImage>;
using CpuBuilder = stoke::DataLoaderBuilder<stoke::cpu::Backend, images::ImageBatcher>;
using CudaBuilder = stoke::DataLoaderBuilder<cu::Backend, cu::AugmentingImageBatcher>;

TEST(CudaAugmentingImageBatcher, EqualsTheCpuBatchBitForBitWithFlipsAndColourJitter) {
  STOKE_CUDA_REQUIRE_DEVICES(1);
  const auto items = stoke::testing::jpegs(23);
  for (const bool jitter : {false, true}) {
    const images::ImageBatcher cpu = cpu_batcher(jitter);
    auto on_cpu = CpuBuilder(cpu).batch_size(5).shuffle(5).build_batch_loader(Dataset(items));
    auto on_device = CudaBuilder(same_settings_on<cu::AugmentingImageBatcher>(cpu))
                         .batch_size(5)
                         .shuffle(5)
                         .num_workers(2)
                         .build(Dataset(items));
    for (const std::size_t epoch : {0, 3}) {
      on_cpu.set_epoch(epoch);
      on_device.set_epoch(epoch);
      const std::string what = std::string(jitter ? "with" : "without") + " colour jitter, epoch " +
                               std::to_string(epoch);
      EXPECT_EQ(expect_equal_epochs<cu::Backend>(on_cpu, on_device, what), items.size()) << what;
    }
  }
}

TEST(CudaAugmentingImageBatcher, EqualsTheCpuBatchBitForBitInGrey) {
  STOKE_CUDA_REQUIRE_DEVICES(1);
  const auto items = stoke::testing::jpegs(11);
  for (const bool jitter : {false, true}) {
    const images::ImageBatcher cpu = cpu_batcher(jitter, 1);
    auto on_cpu = CpuBuilder(cpu).batch_size(4).shuffle(1).build_batch_loader(Dataset(items));
    auto on_device = CudaBuilder(same_settings_on<cu::AugmentingImageBatcher>(cpu))
                         .batch_size(4)
                         .shuffle(1)
                         .build_batch_loader(Dataset(items));
    EXPECT_EQ(expect_equal_epochs<cu::Backend>(on_cpu, on_device, jitter ? "grey, jitter" : "grey"),
              items.size());
  }
}

TEST(CudaAugmentingImageBatcher, ABatchLandsOnTheDeviceItIsFor) {
  STOKE_CUDA_REQUIRE_DEVICES(1);
  const auto items = stoke::testing::jpegs(6);
  const cu::AugmentingImageBatcher batcher =
      same_settings_on<cu::AugmentingImageBatcher>(cpu_batcher(false));
  const std::vector<std::size_t> indices{0, 1, 2, 3, 4, 5};
  const stoke::SampleContext context{.seed = 1, .epoch = 0, .indices = indices};
  const stoke::detail::SampleContextScope scope(context);
  for (const auto& device : cu::Backend::devices()) {
    const cu::ImageBatch batch = batcher.batch(items, device);
    EXPECT_EQ(batch.device(), device);
    EXPECT_EQ(batch.rows, 6U);
    EXPECT_EQ(batch.row_size, 3U * 24 * 20);
    EXPECT_THAT(batch.labels, ::testing::ElementsAre(0, 1, 2, 3, 4, 5));
    batch.ready.wait();
  }
  const auto empty = batcher.batch({}, cu::Backend::devices().front());
  empty.ready.wait();
  EXPECT_EQ(empty.rows, 0U);
}

TEST(CudaAugmentingImageBatcher, ABadSampleIsReplacedAsOnTheCpu) {
  STOKE_CUDA_REQUIRE_DEVICES(1);
  auto items = stoke::testing::jpegs(12);
  items[2] = stoke::testing::truncated(items[2], "bad-2.jpg");
  items[3] = stoke::testing::truncated(items[3], "bad-3.jpg");
  items[3].label = 9;
  images::ImageBatcher cpu = cpu_batcher(true);
  cpu.bad_samples.max_per_epoch = 2;
  const cu::AugmentingImageBatcher gpu = same_settings_on<cu::AugmentingImageBatcher>(cpu);
  auto on_cpu = CpuBuilder(cpu).batch_size(6).build_batch_loader(Dataset(items));
  auto on_device = CudaBuilder(gpu).batch_size(6).build_batch_loader(Dataset(items));
  EXPECT_EQ(expect_equal_epochs<cu::Backend>(on_cpu, on_device, "bad samples"), items.size());
  EXPECT_EQ(gpu.log->count(0), 2U);
  const auto logged = gpu.log->samples();
  ASSERT_EQ(logged.size(), 2U);
  EXPECT_EQ(logged[0].replacement, 4U);
  EXPECT_EQ(logged[1].replacement, 4U);
}

}  // namespace

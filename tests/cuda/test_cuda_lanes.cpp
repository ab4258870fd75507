// Lanes: several stoke devices on one GPU. Their collective (cuda::LaneCollective) sums on the
// GPU in participant order, which gives the host collective's bits, all-gathers parameter
// shards, needs no NCCL on one GPU, and the learner on 2 and 3 lanes of one GPU follows one
// CPU device fed the global batch (the N-devices-equals-one-device equivalence).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include <stoke/cuda.hpp>
#include <stoke/learner.hpp>
#include <stoke/stoke.hpp>

#include "cuda_skip.hpp"
#include "toy_images.hpp"

namespace {

namespace cu = stoke::cuda;
using stoke::testing::ToyImages;

/// `count` lanes of the first GPU: `cuda:0, cuda:0.1, ...`.
std::vector<cu::Device> lanes_of_one_gpu(std::size_t count) {
  return cu::lanes_over(1, count);
}

/// Participant `p`'s values: magnitudes far apart, so that the order of a sum shows in its bits.
std::vector<float> values_of(std::size_t p, std::size_t length) {
  std::vector<float> values(length);
  const float scale[] = {1e8f, 1.0f, -1e8f, 0.5f};
  for (std::size_t i = 0; i < length; ++i) {
    values[i] =
        scale[p % 4] * (1.0f + static_cast<float>(i) * 0.125f) + 0.1f * static_cast<float>(p);
  }
  return values;
}

/// The floats of a device buffer.
std::vector<float> download(const cu::Buffer& buffer) {
  const auto bytes = cu::Backend::make_stager(buffer.device(), 1)->download(buffer);
  std::vector<float> out(bytes.size() / sizeof(float));
  if (!bytes.empty()) std::memcpy(out.data(), bytes.data(), bytes.size());
  return out;
}

/// Runs `body(participant, buffer)` on one thread per device, `buffer` holding `start(p)` on
/// device `p`; returns every buffer's floats afterwards.
template <class Start, class Body>
std::vector<std::vector<float>> on_lanes(const std::vector<cu::Device>& devices, Start start,
                                         Body body) {
  std::vector<std::vector<float>> out(devices.size());
  std::vector<std::thread> threads;
  for (std::size_t p = 0; p < devices.size(); ++p) {
    threads.emplace_back([&, p] {
      const std::vector<float> mine = start(p);
      auto staged = cu::Backend::make_stager(devices[p], 1)->upload(std::as_bytes(std::span(mine)));
      body(p, staged.value);
      out[p] = download(staged.value);
    });
  }
  for (auto& thread : threads) thread.join();
  return out;
}

TEST(CudaLanes, MoreLanesOnAGpuThanTheSumTakesIsAUsageErrorBeforeAnyCudaCall) {
  std::vector<cu::Device> devices;
  for (int lane = 0; lane <= static_cast<int>(cu::max_lanes_per_gpu); ++lane) {
    devices.push_back({.ordinal = 0, .lane = lane});
  }
  EXPECT_THROW(cu::LaneCollective collective(devices), stoke::UsageError);
}

TEST(CudaLanes, LanesOfOneGpuSumBitForBitAsTheHostCollective) {
  STOKE_CUDA_REQUIRE_DEVICES(1);
  for (const std::size_t lanes : {2u, 3u}) {
    const std::size_t length = 1000;
    const auto devices = lanes_of_one_gpu(lanes);
    auto collective = cu::Backend::make_collective(devices);  // no NCCL on one GPU
    ASSERT_EQ(collective->size(), lanes);
    const auto summed = on_lanes(
        devices, [&](std::size_t p) { return values_of(p, length); },
        [&](std::size_t p, cu::Buffer& values) { collective->all_reduce_sum(p, values); });
    stoke::SharedMemoryCollective host(lanes);
    std::vector<std::vector<float>> expected(lanes);
    std::vector<std::thread> threads;
    for (std::size_t p = 0; p < lanes; ++p) {
      threads.emplace_back([&, p] {
        expected[p] = values_of(p, length);
        host.all_reduce_sum(p, expected[p]);
      });
    }
    for (auto& thread : threads) thread.join();
    for (std::size_t p = 0; p < lanes; ++p) {
      EXPECT_EQ(summed[p], expected[0]) << lanes << " lanes, lane " << p;  // bit for bit
    }
  }
}

TEST(CudaLanes, LanesOfOneGpuAllGatherEveryShard) {
  STOKE_CUDA_REQUIRE_DEVICES(1);
  for (const std::size_t lanes : {2u, 3u}) {
    const auto devices = lanes_of_one_gpu(lanes);
    auto collective = cu::Backend::make_collective(devices);
    for (const std::size_t length : {4 * lanes, 4 * lanes + 1, lanes - 1}) {
      const auto gathered = on_lanes(
          devices,
          [&](std::size_t p) {
            std::vector<float> mine(length, -1.0f);
            const auto own = stoke::parameter_shard(length, p, lanes);
            for (std::size_t i = own.begin; i < own.end; ++i) mine[i] = 10.0f * p + i;
            return mine;
          },
          [&](std::size_t p, cu::Buffer& values) { collective->all_gather(p, values); });
      std::vector<float> expected(length);
      for (std::size_t p = 0; p < lanes; ++p) {
        const auto shard = stoke::parameter_shard(length, p, lanes);
        for (std::size_t i = shard.begin; i < shard.end; ++i) expected[i] = 10.0f * p + i;
      }
      for (std::size_t p = 0; p < lanes; ++p) {
        EXPECT_EQ(gathered[p], expected) << lanes << " lanes, lane " << p << ", " << length;
      }
    }
  }
}

TEST(CudaLanes, ABufferOfAnotherLaneIsAUsageErrorThatWakesTheOthers) {
  STOKE_CUDA_REQUIRE_DEVICES(1);
  const auto devices = lanes_of_one_gpu(2);
  auto collective = cu::Backend::make_collective(devices);
  std::vector<std::string> errors(2);
  std::vector<std::thread> threads;
  for (std::size_t p = 0; p < 2; ++p) {
    threads.emplace_back([&, p] {
      const std::vector<float> mine{1.0f, 2.0f};
      // Lane 1 passes a buffer of lane 0.
      auto staged = cu::Backend::make_stager(devices[0], 1)->upload(std::as_bytes(std::span(mine)));
      try {
        collective->all_reduce_sum(p, staged.value);
      } catch (const stoke::Error& error) {
        errors[p] = error.what();
      }
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_THAT(errors[1], ::testing::HasSubstr("passed a buffer on cuda:0"));
  EXPECT_NE(errors[0], "");
}

using Classifier = stoke::SoftmaxClassifier<cu::Backend, cu::ImageBatch>;
using CpuBuilder = stoke::DataLoaderBuilder<stoke::cpu::Backend, stoke::cpu::ImageBatcher>;
using CudaBuilder = stoke::DataLoaderBuilder<cu::Backend, cu::ImageBatcher>;
constexpr std::uint64_t kSeed = 3;

class CudaLanesEquivalence : public ::testing::TestWithParam<std::size_t> {};

TEST_P(CudaLanesEquivalence, LanesOfOneGpuWithBatchBFollowOneCpuDeviceWithBatchNB) {
  STOKE_CUDA_REQUIRE_DEVICES(1);
  const std::size_t lanes = GetParam();
  const ToyImages train(480), valid(100, 9);
  const auto devices = lanes_of_one_gpu(lanes);
  stoke::Learner<cu::Backend, Classifier, stoke::Sgd, stoke::ConstantLr> on_lanes(
      Classifier(devices[0], ToyImages::kPixels, ToyImages::kClasses, kSeed),
      stoke::Sgd(0.1f, 0.9f), stoke::ConstantLr{0.1f}, devices, {.epochs = 2, .log = nullptr});
  const auto run = on_lanes.fit(
      CudaBuilder(cu::ImageBatcher{}).batch_size(8).shuffle(5).drop_last().build(train),
      CudaBuilder(cu::ImageBatcher{}).batch_size(32).pad().build(valid));

  stoke::Learner<stoke::cpu::Backend, stoke::Mlp, stoke::Sgd, stoke::ConstantLr> on_cpu(
      stoke::Mlp({ToyImages::kPixels, ToyImages::kClasses}, kSeed), stoke::Sgd(0.1f, 0.9f),
      stoke::ConstantLr{0.1f}, stoke::cpu::Backend::devices(1), {.epochs = 2, .log = nullptr});
  const auto reference =
      on_cpu.fit(CpuBuilder({}).batch_size(8 * lanes).shuffle(5).drop_last().build(train),
                 CpuBuilder({}).batch_size(32).pad().build(valid));

  ASSERT_EQ(run.step_losses.size(), reference.step_losses.size());
  ASSERT_EQ(run.step_losses.size(), 2 * (480 / (8 * lanes)));
  for (std::size_t s = 0; s < run.step_losses.size(); ++s) {
    ASSERT_NEAR(run.step_losses[s], reference.step_losses[s],
                1e-4f * (1.0f + std::fabs(reference.step_losses[s])))
        << "step " << s;
  }
  const std::vector<float> parameters = cu::Backend::download(on_lanes.model().parameters());
  const auto expected = on_cpu.model().parameters();
  ASSERT_EQ(parameters.size(), expected.size());
  for (std::size_t i = 0; i < parameters.size(); ++i) {
    ASSERT_NEAR(parameters[i], expected[i], 1e-4f) << "parameter " << i;
  }
  EXPECT_EQ(run.epochs.back().valid_items, 100u);
  EXPECT_NEAR(run.epochs.back().valid_accuracy, reference.epochs.back().valid_accuracy, 0.011);
}

INSTANTIATE_TEST_SUITE_P(Lanes, CudaLanesEquivalence, ::testing::Values(2u, 3u));

}  // namespace

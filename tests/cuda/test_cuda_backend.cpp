// cuda::Backend: devices, names, errors; skips without a CUDA device. The lanes' bookkeeping
// (names, hashing, how a count of devices is laid over the GPUs) is pure and runs everywhere.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <sstream>
#include <string>
#include <unordered_set>
#include <utility>
#include <vector>

#include <stoke/cuda.hpp>

#include "cuda_skip.hpp"

namespace {

static_assert(stoke::Backend<stoke::cuda::Backend>);
static_assert(stoke::StagingBackend<stoke::cuda::Backend>);
static_assert(stoke::Fence<stoke::cuda::Fence>);
static_assert(stoke::Device<stoke::cuda::Device>);
static_assert(stoke::CollectiveBackend<stoke::cuda::Backend>);

TEST(CudaBackend, DevicesAreTheVisibleOrdinalsNamedCudaN) {
  STOKE_CUDA_REQUIRE_DEVICES(1);
  const auto devices = stoke::cuda::Backend::devices();
  std::unordered_set<stoke::cuda::Device> distinct(devices.begin(), devices.end());
  EXPECT_EQ(distinct.size(), devices.size());
  for (std::size_t i = 0; i < devices.size(); ++i) {
    EXPECT_EQ(devices[i].ordinal, static_cast<int>(i));
    EXPECT_EQ(stoke::device_name(devices[i]), "cuda:" + std::to_string(i));
  }
  EXPECT_EQ(stoke::cuda::Backend::name(), "cuda");
}

TEST(CudaBackend, AFailedCallThrowsDeviceErrorWithStatusAndCallSite) {
  STOKE_CUDA_REQUIRE_DEVICES(1);
  try {
    STOKE_CUDA_CHECK(cudaSetDevice(1 << 20));
    FAIL() << "cudaSetDevice of a device that does not exist succeeded";
  } catch (const stoke::cuda::DeviceError& error) {
    EXPECT_EQ(error.library(), stoke::cuda::Library::cuda);
    EXPECT_EQ(error.cuda_status(), cudaErrorInvalidDevice);
    EXPECT_NE(std::string(error.what()).find("cudaSetDevice"), std::string::npos) << error.what();
    EXPECT_NE(std::string(error.where().file_name()).find("test_cuda_backend"), std::string::npos);
  }
}

TEST(CudaBackend, WithoutADeviceTheListIsEmptyAndTheReasonSaysWhy) {
  if (!stoke::cuda::unavailable_reason().empty()) {
    EXPECT_TRUE(stoke::cuda::Backend::devices().empty());
    if (stoke::testing::cuda_required()) FAIL() << stoke::cuda::unavailable_reason();
    GTEST_SKIP() << stoke::cuda::unavailable_reason();
  }
  EXPECT_FALSE(stoke::cuda::Backend::devices().empty());
}

// Lanes: several stoke devices on one GPU. None of these tests needs a GPU.

/// `(ordinal, lane)` of each device.
std::vector<std::pair<int, int>> places(const std::vector<stoke::cuda::Device>& devices) {
  std::vector<std::pair<int, int>> out;
  for (const auto& device : devices) out.emplace_back(device.ordinal, device.lane);
  return out;
}

TEST(CudaLanes, ALaneIsNamedAfterItsGpuAndLaneZeroIsTheGpuItself) {
  EXPECT_EQ(stoke::device_name(stoke::cuda::Device{.ordinal = 0, .lane = 1}), "cuda:0.1");
  EXPECT_EQ(stoke::device_name(stoke::cuda::Device{.ordinal = 3, .lane = 2}), "cuda:3.2");
  EXPECT_EQ(stoke::device_name(stoke::cuda::Device{.ordinal = 1}), "cuda:1");
  EXPECT_EQ((stoke::cuda::Device{.ordinal = 0, .lane = 0}), stoke::cuda::Device{});
  EXPECT_NE((stoke::cuda::Device{.ordinal = 0, .lane = 1}), stoke::cuda::Device{});
  EXPECT_NE((stoke::cuda::Device{.ordinal = 0, .lane = 1}),
            (stoke::cuda::Device{.ordinal = 1, .lane = 0}));
}

TEST(CudaLanes, EveryOrdinalAndLaneHashesApart) {
  std::unordered_set<stoke::cuda::Device> seen;
  std::unordered_set<std::size_t> hashes;
  for (int ordinal = 0; ordinal < 16; ++ordinal) {
    for (int lane = 0; lane < 8; ++lane) {
      const stoke::cuda::Device device{.ordinal = ordinal, .lane = lane};
      EXPECT_TRUE(seen.insert(device).second) << device;
      hashes.insert(std::hash<stoke::cuda::Device>{}(device));
    }
  }
  EXPECT_EQ(seen.size(), 128u);
  EXPECT_EQ(hashes.size(), 128u) << "two devices of 16 GPUs x 8 lanes share a hash";
}

TEST(CudaLanes, DevicesAreLaidRoundRobinOverTheGpus) {
  using stoke::cuda::lanes_over;
  using Places = std::vector<std::pair<int, int>>;
  EXPECT_EQ(places(lanes_over(1, 1)), (Places{{0, 0}}));
  EXPECT_EQ(places(lanes_over(1, 3)), (Places{{0, 0}, {0, 1}, {0, 2}}));
  EXPECT_EQ(places(lanes_over(2, 2)), (Places{{0, 0}, {1, 0}}));  // no lane while GPUs last
  EXPECT_EQ(places(lanes_over(4, 2)), (Places{{0, 0}, {1, 0}}));  // the first GPUs
  EXPECT_EQ(places(lanes_over(2, 5)), (Places{{0, 0}, {1, 0}, {0, 1}, {1, 1}, {0, 2}}));
  EXPECT_TRUE(lanes_over(2, 0).empty());
  EXPECT_TRUE(lanes_over(0, 0).empty());
  // As many devices as can be given: every device distinct, every GPU within one lane of the
  // others.
  for (std::size_t gpus = 1; gpus <= 5; ++gpus) {
    for (std::size_t count = 1; count <= gpus * stoke::cuda::max_lanes_per_gpu; ++count) {
      const auto devices = lanes_over(gpus, count);
      ASSERT_EQ(devices.size(), count);
      std::unordered_set<stoke::cuda::Device> distinct(devices.begin(), devices.end());
      EXPECT_EQ(distinct.size(), count) << gpus << " GPUs, " << count << " devices";
      std::vector<std::size_t> per_gpu(gpus, 0);
      for (const auto& device : devices) {
        ASSERT_LT(static_cast<std::size_t>(device.ordinal), gpus);
        EXPECT_EQ(static_cast<std::size_t>(device.lane), per_gpu[device.ordinal]++)
            << "lanes of a GPU are numbered in order from 0";
      }
      const auto [least, most] = std::minmax_element(per_gpu.begin(), per_gpu.end());
      EXPECT_LE(*most - *least, 1u) << gpus << " GPUs, " << count << " devices";
    }
  }
}

TEST(CudaLanes, AskingForWhatCannotBeGivenIsAUsageError) {
  using stoke::cuda::lanes_over;
  try {
    (void)lanes_over(0, 2);
    FAIL() << "2 devices on no GPU";
  } catch (const stoke::UsageError& error) {
    EXPECT_NE(std::string(error.what()).find("no CUDA GPU"), std::string::npos) << error.what();
  }
  const std::size_t most = stoke::cuda::max_lanes_per_gpu;
  EXPECT_EQ(lanes_over(2, 2 * most).size(), 2 * most);
  try {
    (void)lanes_over(2, 2 * most + 1);
    FAIL() << "more lanes than allowed";
  } catch (const stoke::UsageError& error) {
    EXPECT_NE(std::string(error.what()).find(std::to_string(most + 1) + " lanes"),
              std::string::npos)
        << error.what();
  }
}

TEST(CudaLanes, TheBackendLaysItsDevicesOverTheVisibleGpus) {
  // Without a GPU, asking for a device says why none can be given; asking for none is fine.
  EXPECT_TRUE(stoke::cuda::Backend::devices(0).empty());
  if (const std::string why = stoke::cuda::unavailable_reason(); !why.empty()) {
    try {
      (void)stoke::cuda::Backend::devices(2);
      FAIL() << "2 devices without a GPU";
    } catch (const stoke::UsageError& error) {
      EXPECT_NE(std::string(error.what()).find(why), std::string::npos) << error.what();
    }
    if (stoke::testing::cuda_required()) FAIL() << why << " (STOKE_REQUIRE_CUDA=1)";
    return;  // the bookkeeping above is what runs without a GPU
  }
  const std::size_t gpus = stoke::cuda::Backend::devices().size();
  EXPECT_EQ(stoke::cuda::Backend::devices(gpus), stoke::cuda::Backend::devices());
  EXPECT_EQ(stoke::cuda::Backend::devices(gpus + 1), stoke::cuda::lanes_over(gpus, gpus + 1));
  EXPECT_EQ(stoke::cuda::Backend::devices(gpus + 1).back(),
            (stoke::cuda::Device{.ordinal = 0, .lane = 1}));
}

// Lanes of one GPU share a collective with no NCCL (test_cuda_lanes.cpp).
TEST(CudaLanes, TwoLanesOfEveryGpuGetOneCollective) {
  STOKE_CUDA_REQUIRE_DEVICES(1);
  const std::size_t gpus = stoke::cuda::Backend::devices().size();
#if !defined(STOKE_CUDA_HAS_NCCL)
  if (gpus > 1) GTEST_SKIP() << "several GPUs need NCCL, and this build has none";
#endif
  const auto collective =
      stoke::cuda::Backend::make_collective(stoke::cuda::Backend::devices(2 * gpus));
  EXPECT_EQ(collective->size(), 2 * gpus);
  EXPECT_EQ(collective->groups().groups(), gpus);
}

}  // namespace

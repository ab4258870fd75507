// cuda::Backend: devices, names, errors; skips without a CUDA device.
#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <unordered_set>

#include <stoke/cuda.hpp>

#include "cuda_skip.hpp"

namespace {

static_assert(stoke::Backend<stoke::cuda::Backend>);
static_assert(stoke::StagingBackend<stoke::cuda::Backend>);
static_assert(stoke::Fence<stoke::cuda::Fence>);
static_assert(stoke::Device<stoke::cuda::Device>);
#if defined(STOKE_CUDA_HAS_NCCL)
static_assert(stoke::CollectiveBackend<stoke::cuda::Backend>);
#endif

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

}  // namespace

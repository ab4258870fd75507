// cuda::NcclCollective: all_reduce over the local devices, one thread each.
#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <thread>
#include <vector>

#include <stoke/cuda.hpp>

#include "cuda_skip.hpp"

namespace {

#if defined(STOKE_CUDA_HAS_NCCL)
TEST(CudaCollective, AllReduceSumsDeviceBuffersOverEveryLocalDevice) {
  STOKE_CUDA_REQUIRE_DEVICES(1);
  const auto devices = stoke::cuda::Backend::devices();
  auto collective = stoke::cuda::Backend::make_collective(devices);
  ASSERT_EQ(collective->size(), devices.size());
  const std::size_t n = 1000;
  std::vector<std::vector<float>> results(devices.size());
  std::vector<std::thread> threads;
  for (std::size_t k = 0; k < devices.size(); ++k) {
    threads.emplace_back([&, k] {
      std::vector<float> mine(n);
      for (std::size_t i = 0; i < n; ++i) mine[i] = static_cast<float>(i + 100 * k);
      auto stager = stoke::cuda::Backend::make_stager(devices[k], 1);
      auto staged = stager->upload(std::as_bytes(std::span(mine)));
      collective->all_reduce_sum(k, staged.value);
      const auto bytes = stager->download(staged.value);
      results[k].resize(n);
      std::memcpy(results[k].data(), bytes.data(), bytes.size());
    });
  }
  for (auto& thread : threads) thread.join();
  const std::size_t d = devices.size();
  for (std::size_t k = 0; k < d; ++k) {
    for (std::size_t i = 0; i < n; ++i) {
      ASSERT_EQ(results[k][i], static_cast<float>(d * i + 100 * (d * (d - 1) / 2)))
          << "device " << k << " at " << i;
    }
  }
}

TEST(CudaCollective, AnAllReduceOnABufferIsFencedNotWaitedFor) {
  STOKE_CUDA_REQUIRE_DEVICES(1);
  const auto devices = stoke::cuda::Backend::devices(1);
  auto collective = stoke::cuda::Backend::make_collective(devices);
  auto stager = stoke::cuda::Backend::make_stager(devices[0], 1);
  const std::vector<float> mine{1.0f, 2.0f, 3.0f};
  auto staged = stager->upload(std::as_bytes(std::span(mine)));
  const cudaEvent_t uploaded = staged.value.written().event();
  collective->all_reduce_sum(0, staged.value);
  // The buffer is now written by the collective's own event, which later work waits on.
  EXPECT_NE(staged.value.written().event(), nullptr);
  EXPECT_NE(staged.value.written().event(), uploaded);
  const auto bytes = stager->download(staged.value);
  std::vector<float> sums(mine.size());
  std::memcpy(sums.data(), bytes.data(), bytes.size());
  EXPECT_EQ(sums, mine);
}

TEST(CudaCollective, APeerThatNeverComesFailsTheNextCallThroughTheWatchdog) {
  STOKE_CUDA_REQUIRE_DEVICES(2);
  const auto devices = stoke::cuda::Backend::devices(2);
  auto collective = stoke::cuda::Backend::make_collective(devices);
  collective->set_timeout(std::chrono::milliseconds(100));
  auto stager = stoke::cuda::Backend::make_stager(devices[0], 1);
  const std::vector<float> mine{1.0f, 2.0f};
  auto staged = stager->upload(std::as_bytes(std::span(mine)));
  collective->all_reduce_sum(0, staged.value);  // returns at once; participant 1 never comes
  // The watchdog aborts the communicators past the timeout, which ends the collective.
  try {
    staged.value.written().wait();
  } catch (const stoke::Error&) {  // an aborted NCCL kernel may fail its stream
  }
  EXPECT_THROW(collective->all_reduce_sum(0, staged.value), stoke::Error);
}
#else
TEST(CudaCollective, AllReduceSumsDeviceBuffersOverEveryLocalDevice) {
  GTEST_SKIP() << "stoke::cuda was built without NCCL (STOKE_ENABLE_NCCL is OFF)";
}
#endif

}  // namespace

// cuda::Stager: uploads land intact, fences are respected, the staging pool is bounded.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <thread>
#include <vector>

#include <stoke/cuda.hpp>

#include "cuda_skip.hpp"

namespace {

std::vector<std::byte> pattern(std::size_t size, unsigned seed) {
  std::vector<std::byte> bytes(size);
  for (std::size_t i = 0; i < size; ++i)
    bytes[i] = std::byte(static_cast<unsigned char>(seed + 7 * i));
  return bytes;
}

TEST(CudaStaging, UploadThenDownloadGivesBackTheBytes) {
  STOKE_CUDA_REQUIRE_DEVICES(1);
  for (const auto& device : stoke::cuda::Backend::devices()) {
    auto stager = stoke::cuda::Backend::make_stager(device, 2);
    EXPECT_EQ(stager->device(), device);
    const auto bytes = pattern(3 << 20, 5);
    auto staged = stager->upload(bytes);
    EXPECT_EQ(staged.value.device(), device);
    EXPECT_EQ(staged.value.size(), bytes.size());
    staged.fence.wait();
    EXPECT_TRUE(staged.fence.ready());
    EXPECT_EQ(stager->download(staged.value), bytes);
    const auto empty = stager->upload({});
    EXPECT_TRUE(stager->download(empty.value).empty());
  }
}

TEST(CudaStaging, AStagingBufferIsRefilledOnlyAfterItsCopysFence) {
  STOKE_CUDA_REQUIRE_DEVICES(1);
  auto stager = stoke::cuda::Backend::make_stager(stoke::cuda::Backend::devices()[0], 1);
  auto first_bytes = pattern(16 << 20, 1);
  const auto first_sent = first_bytes;
  auto first = stager->upload(first_bytes);
  std::ranges::fill(first_bytes, std::byte{0});  // the caller may reuse its bytes at once
  // The one staging buffer is needed again at once: it must not be overwritten while the
  // first copy still reads it.
  const auto second_sent = pattern(16 << 20, 2);
  auto second = stager->upload(second_sent);
  EXPECT_EQ(stager->download(first.value), first_sent);
  EXPECT_EQ(stager->download(second.value), second_sent);
  EXPECT_EQ(stager->staging_buffers(), 1u);
}

TEST(CudaStaging, ThePoolOfStagingBuffersStaysBounded) {
  STOKE_CUDA_REQUIRE_DEVICES(1);
  auto stager = stoke::cuda::Backend::make_stager(stoke::cuda::Backend::devices()[0], 3);
  EXPECT_EQ(stager->capacity(), 3u);
  std::vector<std::thread> threads;
  std::vector<std::vector<stoke::Staged<stoke::cuda::Buffer, stoke::cuda::Fence>>> staged(4);
  for (unsigned t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (unsigned k = 0; k < 10; ++k) {
        staged[t].push_back(stager->upload(pattern(1 << 18, 16 * t + k)));
        EXPECT_LE(stager->staging_buffers(), 3u);
      }
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_LE(stager->staging_buffers(), 3u);
  for (unsigned t = 0; t < 4; ++t) {
    for (unsigned k = 0; k < 10; ++k) {
      EXPECT_EQ(stager->download(staged[t][k].value), pattern(1 << 18, 16 * t + k));
    }
  }
}

TEST(CudaStaging, BuffersAndFencesOutliveTheirStager) {
  STOKE_CUDA_REQUIRE_DEVICES(1);
  const auto device = stoke::cuda::Backend::devices()[0];
  const auto bytes = pattern(1 << 20, 9);
  auto staged = stoke::cuda::Backend::make_stager(device, 1)->upload(bytes);
  staged.fence.wait();
  EXPECT_EQ(stoke::cuda::Backend::make_stager(device, 1)->download(staged.value), bytes);
}

}  // namespace

// The Vulkan stager: uploads fenced by timeline semaphores through a bounded, recycled pool
// of staging buffers, a staging buffer reused only after its copy's fence.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <thread>
#include <vector>

#include <stoke/vulkan.hpp>

#include "test_sync.hpp"
#include "vulkan_validation.hpp"

namespace {

using stoke::testing::Flag;

using namespace std::chrono_literals;
namespace vk = stoke::vulkan;
using VulkanStager = stoke::testing::VulkanTest;
using Upload = stoke::Staged<vk::Buffer, vk::Fence>;

/// `size` bytes counting up from `seed`.
std::vector<std::byte> pattern(std::size_t size, unsigned seed) {
  std::vector<std::byte> bytes(size);
  for (std::size_t i = 0; i < size; ++i)
    bytes[i] = std::byte(static_cast<unsigned char>(seed + i * 7));
  return bytes;
}

/// A semaphore the test raises by hand: work waiting on it cannot start before it does.
std::shared_ptr<const vk::TimelineSemaphore> make_gate(const vk::Device& device) {
  return std::make_shared<const vk::TimelineSemaphore>(vk::context(device)->logical_device());
}

/// Whether `fence` signals within `time`: waits on its semaphore at most that long.
bool signals_within(const vk::Fence& fence, std::chrono::nanoseconds time) {
  if (!fence.semaphore()) return true;
  const VkSemaphore handle = fence.semaphore()->handle();
  const std::uint64_t value = fence.value();
  const VkSemaphoreWaitInfo info{
      VK_STRUCTURE_TYPE_SEMAPHORE_WAIT_INFO, nullptr, 0, 1, &handle, &value};
  const VkResult result = vkWaitSemaphores(fence.semaphore()->device().handle(), &info,
                                           static_cast<std::uint64_t>(time.count()));
  if (result != VK_SUCCESS && result != VK_TIMEOUT) {
    ADD_FAILURE() << "vkWaitSemaphores: " << result;
  }
  return result == VK_SUCCESS;
}

TEST_F(VulkanStager, UploadsBytesAndDownloadsThemBack) {
  const auto stager = vk::Backend::make_stager(vk::Device{0}, 2);
  for (const std::size_t size : {0u, 1u, 3u, 4u, 1000u, 1u << 20}) {
    const auto bytes = pattern(size, static_cast<unsigned>(size));
    auto upload = stager->upload(bytes);
    EXPECT_EQ(upload.value.size(), size);
    EXPECT_EQ(upload.value.device(), vk::Device{0});
    upload.fence.wait();
    EXPECT_TRUE(upload.fence.ready());
    EXPECT_EQ(stager->download(upload.value), bytes) << size << " bytes";
  }
}

TEST_F(VulkanStager, ReturnsBeforeTheCopyRunsAndItsFenceSignalsWhenItHas) {
  const auto gate = make_gate(vk::Device{0});
  const vk::Fence open(gate, 1);
  const auto stager = vk::Backend::make_stager(vk::Device{0}, 1);
  const auto bytes = pattern(4096, 1);
  auto upload = stager->upload(bytes, std::span(&open, 1));
  // The copy is given 20 ms to (wrongly) run, ending the wait early if it does.
  EXPECT_FALSE(signals_within(upload.fence, 20ms)) << "the copy ran: its gate is closed";
  EXPECT_FALSE(upload.fence.ready()) << "the copy cannot have run: its gate is closed";
  gate->signal(1);
  upload.fence.wait();
  EXPECT_TRUE(upload.fence.ready());
  EXPECT_EQ(stager->download(upload.value), bytes);
}

TEST_F(VulkanStager, ReusesAStagingBufferOnlyAfterItsCopysFenceSignalled) {
  // One staging buffer. The first copy out of it waits for a gate the test holds closed, so
  // writing the second upload's bytes into it before that fence would overwrite what the
  // first copy has not read yet: the first device buffer would hold the second's bytes.
  // The copy is large (milliseconds on lavapipe) so that the host signal of the gate is fully
  // recorded by the validation layer before the waiting thread wakes: layers before 2024 time
  // out otherwise (UNASSIGNED-VkSemaphore-state-timeout, KhronosGroup/Vulkan-ValidationLayers
  // #4649 and #8370, fixed by #8519).
  const auto gate = make_gate(vk::Device{0});
  const vk::Fence open(gate, 1);
  const auto stager = vk::Backend::make_stager(vk::Device{0}, 1);
  const auto first_bytes = pattern(32u << 20, 1);
  const auto second_bytes = pattern(32u << 20, 2);
  Upload first = stager->upload(first_bytes, std::span(&open, 1));
  std::optional<Upload> second;
  Flag second_returned;
  std::thread uploader([&] {
    second.emplace(stager->upload(second_bytes));
    second_returned.set();
  });
  // The second upload waits inside the stager, where nothing outside it shows: it must not
  // return before the gate opens, and is given 100 ms to show otherwise (the wait ends if it
  // does).
  EXPECT_FALSE(second_returned.set_within(100ms))
      << "the staging buffer was refilled before its copy's fence";
  EXPECT_FALSE(first.fence.ready());
  gate->signal(1);
  uploader.join();
  ASSERT_TRUE(second.has_value());
  EXPECT_TRUE(stager->download(first.value) == first_bytes) << "the first upload was overwritten";
  EXPECT_TRUE(stager->download(second->value) == second_bytes);
  EXPECT_EQ(stager->staging_buffers(), 1u);
}

TEST_F(VulkanStager, KeepsItsStagingPoolBounded) {
  const auto stager = vk::Backend::make_stager(vk::Device{0}, 3);
  std::vector<std::vector<std::byte>> sent;
  std::vector<Upload> uploads;
  for (unsigned i = 0; i < 40; ++i) {
    sent.push_back(pattern(1000 + 4096 * (i % 5), i));
    uploads.push_back(stager->upload(sent.back()));  // no waiting in between
    EXPECT_LE(stager->staging_buffers(), 3u);
  }
  EXPECT_EQ(stager->capacity(), 3u);
  for (std::size_t i = 0; i < uploads.size(); ++i) {
    EXPECT_EQ(stager->download(uploads[i].value), sent[i]) << "upload " << i;
  }
  EXPECT_LE(stager->staging_buffers(), 3u);
}

TEST_F(VulkanStager, LetsTheCallerReuseItsBytesAsSoonAsUploadReturns) {
  const auto stager = vk::Backend::make_stager(vk::Device{0}, 2);
  auto bytes = pattern(100000, 5);
  const auto original = bytes;
  auto upload = stager->upload(bytes);
  std::fill(bytes.begin(), bytes.end(), std::byte{0});
  EXPECT_EQ(stager->download(upload.value), original);
}

TEST_F(VulkanStager, UploadsFromSeveralThreadsAtOnce) {
  const auto stager = vk::Backend::make_stager(vk::Device{1}, 2);
  std::vector<std::thread> threads;
  std::atomic<int> wrong{0};
  for (unsigned t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (unsigned i = 0; i < 20; ++i) {
        const auto bytes = pattern(3000 + 100 * i, 16 * t + i);
        auto upload = stager->upload(bytes);
        if (stager->download(upload.value) != bytes) ++wrong;
      }
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(wrong, 0);
  EXPECT_LE(stager->staging_buffers(), 2u);
}

TEST_F(VulkanStager, OverwritesABufferInPlaceAfterItsEarlierWork) {
  const auto stager = vk::Backend::make_stager(vk::Device{0}, 2);
  auto upload = stager->upload(pattern(512, 1));
  const auto replacement = pattern(256, 9);
  stager->upload_into(upload.value, replacement).wait();
  auto expected = replacement;
  const auto tail = pattern(512, 1);
  expected.insert(expected.end(), tail.begin() + 256, tail.end());
  EXPECT_EQ(stager->download(upload.value), expected);
  EXPECT_THROW((void)stager->upload_into(upload.value, pattern(513, 0)), stoke::UsageError);
}

TEST_F(VulkanStager, ReusesTheMemoryOfDroppedDeviceBuffersAndKeepsFewOfThem) {
  const auto stager = vk::Backend::make_stager(vk::Device{1}, 2);
  const auto context = vk::context(vk::Device{1});
  VkBuffer dropped = VK_NULL_HANDLE;
  {
    auto upload = stager->upload(pattern(12345, 1));
    upload.fence.wait();
    dropped = upload.value.handle();
  }
  const auto bytes = pattern(12345, 2);
  auto again = stager->upload(bytes);
  EXPECT_EQ(again.value.handle(), dropped) << "a new buffer of the same size reuses it";
  EXPECT_EQ(stager->download(again.value), bytes);
  for (std::size_t size = 1000; size < 1000 + 30 * 64; size += 64) {
    auto upload = stager->upload(pattern(size, 3));
    upload.fence.wait();
  }
  const auto more = pattern(64, 4);
  EXPECT_EQ(stager->download(stager->upload(more).value), more);
  EXPECT_LE(context->reusable_buffers(), vk::Context::kept_buffers);
}

TEST_F(VulkanStager, DropsABufferWhoseCopyIsStillPendingWithoutAHazard) {
  // The validation layer fails this test if the buffer were destroyed while the copy into it
  // is pending; the context frees it once the copy's fence has signalled.
  const auto gate = make_gate(vk::Device{0});
  const vk::Fence open(gate, 1);
  const auto stager = vk::Backend::make_stager(vk::Device{0}, 1);
  vk::Fence fence;
  {
    auto upload = stager->upload(pattern(65536, 3), std::span(&open, 1));
    fence = upload.fence;
  }  // the buffer is dropped here, its copy still waiting for the gate
  gate->signal(1);
  fence.wait();
  const auto bytes = pattern(64, 4);
  EXPECT_EQ(stager->download(stager->upload(bytes).value), bytes);  // frees the dropped one
}

}  // namespace

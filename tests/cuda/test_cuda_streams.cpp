// Cross-stream ordering of cuda::Buffer, and the kernels' own guarantees: memory that a kernel
// on another stream still reads is not reused when its buffer or batch is dropped; a new
// buffer's first writer can wait for its allocation; the normalise kernel equals the CPU
// table on every path; a device guard never switches devices it does not need to.
#include <gtest/gtest.h>

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <vector>

#include <stoke/cuda.hpp>
#include <stoke/cuda/kernels.hpp>
#include <stoke/data/normalization_table.hpp>
#include <stoke/stoke.hpp>

#include "cuda_skip.hpp"

namespace {

using stoke::cuda::Buffer;
using stoke::cuda::Device;

constexpr std::uint64_t kSlowReaderNs = 200'000'000;  // 0.2 s: far longer than the reuse

/// Host floats of a device buffer.
std::vector<float> download_floats(const Device& device, const Buffer& buffer) {
  const auto bytes = stoke::cuda::Backend::make_stager(device, 1)->download(buffer);
  std::vector<float> out(bytes.size() / sizeof(float));
  std::memcpy(out.data(), bytes.data(), bytes.size());
  return out;
}

/// Overwrites every byte of `count` floats of fresh device memory with 0xFF on the copy stream
/// (what the next batch does to memory the pool hands out again).
Buffer scribble(const Device& device, std::size_t count) {
  Buffer other(device, count * sizeof(float));
  const stoke::cuda::DeviceGuard guard(device);
  STOKE_CUDA_CHECK(
      cudaMemsetAsync(other.data(), 0xFF, other.size(), other.context()->copy_stream()));
  other.mark_written(stoke::cuda::Fence(device, other.context()->copy_stream()));
  return other;
}

TEST(CudaStreams, ABufferFreedWhileAnotherStreamStillReadsItKeepsItsMemoryUntilTheReadEnds) {
  STOKE_CUDA_REQUIRE_DEVICES(1);
  const Device device = stoke::cuda::Backend::devices().front();
  const std::size_t n = 1 << 20;
  std::vector<float> values(n);
  for (std::size_t i = 0; i < n; ++i) values[i] = static_cast<float>(i);
  auto stager = stoke::cuda::Backend::make_stager(device, 1);
  auto staged = stager->upload(std::as_bytes(std::span(values)));
  Buffer out(device, n * sizeof(float));
  const stoke::cuda::Stream reader(device);
  {
    Buffer source = std::move(staged.value);
    const stoke::cuda::DeviceGuard guard(device);
    source.written().enqueue_wait(reader.handle());
    out.written().enqueue_wait(reader.handle());
    STOKE_CUDA_CHECK(stoke::cuda::kernels::delayed_copy(source.floats().data(), out.floats().data(),
                                                        n, kSlowReaderNs, reader.handle()));
    source.record_use(reader.handle());
    out.mark_written(stoke::cuda::Fence(device, reader.handle()));
  }  // `source` is dropped here, while the slow reader has not started copying
  const Buffer reused = scribble(device, n);
  EXPECT_EQ(download_floats(device, out), values);
}

TEST(CudaStreams, ABatchDroppedWhileAKernelReadsItIsNotOverwrittenByTheNextBatches) {
  STOKE_CUDA_REQUIRE_DEVICES(1);
  const Device device = stoke::cuda::Backend::devices().front();
  std::vector<std::vector<std::uint8_t>> pixels(64, std::vector<std::uint8_t>(784));
  std::vector<stoke::LabeledImage> items;
  for (std::size_t i = 0; i < pixels.size(); ++i) {
    for (std::size_t k = 0; k < pixels[i].size(); ++k)
      pixels[i][k] = static_cast<std::uint8_t>((k * 7 + i * 13) & 0xFF);
    items.push_back({pixels[i], static_cast<std::uint32_t>(i % 10)});
  }
  const stoke::cuda::ImageBatcher batcher(0.2860F, 0.3530F);
  const auto expected =
      stoke::cpu::ImageBatcher{.mean = 0.2860F, .std = 0.3530F}.batch(items, stoke::cpu::Device{});
  const std::size_t count = items.size() * 784;
  Buffer out(device, count * sizeof(float));
  const stoke::cuda::Stream step(device);
  {
    auto batch = batcher.batch(items, device);
    const stoke::cuda::DeviceGuard guard(device);
    batch.ready.enqueue_wait(step.handle());
    out.written().enqueue_wait(step.handle());
    STOKE_CUDA_CHECK(stoke::cuda::kernels::delayed_copy(
        batch.inputs.floats().data(), out.floats().data(), count, kSlowReaderNs, step.handle()));
    batch.inputs.record_use(step.handle());
    out.mark_written(stoke::cuda::Fence(device, step.handle()));
  }  // the batch is dropped while the step still reads it
  std::vector<std::uint8_t> white(784, 255);
  const std::vector<stoke::LabeledImage> others(64, stoke::LabeledImage{white, 0});
  for (int i = 0; i < 4; ++i) (void)batcher.batch(others, device);  // reuse the pool's memory
  const auto got = download_floats(device, out);
  const auto want = expected.inputs.values();
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < got.size(); ++i) ASSERT_EQ(got[i], want[i]) << "at " << i;
}

TEST(CudaStreams, ANewBuffersWrittenFenceIsItsAllocation) {
  STOKE_CUDA_REQUIRE_DEVICES(1);
  const Device device = stoke::cuda::Backend::devices().front();
  const Buffer buffer(device, 4096);
  ASSERT_NE(buffer.written().event(), nullptr) << "a first writer would have nothing to wait on";
  buffer.written().wait();
  EXPECT_TRUE(buffer.written().ready());
}

TEST(CudaKernels, NormaliseEqualsTheCpuTableOnTheVectorAndScalarPaths) {
  STOKE_CUDA_REQUIRE_DEVICES(1);
  const Device device = stoke::cuda::Backend::devices().front();
  const auto table = stoke::normalization_table(0.2860F, 0.3530F);
  constexpr std::size_t kMost = (1 << 20) + 13;  // a tail after the 4-byte quads
  constexpr std::size_t kSlack = 8;              // floats before and after what is written
  std::vector<std::uint8_t> bytes(kMost + kSlack);
  for (std::size_t i = 0; i < bytes.size(); ++i)
    bytes[i] = static_cast<std::uint8_t>((i * 2654435761U) >> 24);
  auto stager = stoke::cuda::Backend::make_stager(device, 1);
  const auto input = stager->upload(std::as_bytes(std::span(bytes)));
  input.fence.wait();
  const stoke::cuda::DeviceGuard guard(device);
  const cudaStream_t stream = input.value.context()->copy_stream();
  // Every float of the buffer is written first (initcheck then finds no read of memory never
  // written): 0xA5 bytes, a value no table entry has, so a write past either end shows.
  constexpr std::uint32_t kSentinel = 0xA5A5A5A5U;
  // Offsets 0 and 4 take the vector path (4-byte input, 16-byte output), 1 the scalar path;
  // the counts leave tails of 1, 3 and 2 floats, and the last has no whole quad.
  for (const std::size_t offset : {std::size_t{0}, std::size_t{1}, std::size_t{4}}) {
    for (const std::size_t n : {kMost, std::size_t{4099}, std::size_t{2}}) {
      Buffer out(device, (kMost + kSlack) * sizeof(float));
      STOKE_CUDA_CHECK(cudaMemsetAsync(out.data(), 0xA5, out.size(), stream));
      const auto* in = static_cast<const std::uint8_t*>(input.value.data()) + offset;
      STOKE_CUDA_CHECK(stoke::cuda::kernels::normalize_u8(
          in, out.floats().data() + offset, n, stoke::cuda::kernels::ByteTable::of(table), stream));
      out.mark_written(stoke::cuda::Fence(device, stream));
      const auto got = download_floats(device, out);
      ASSERT_EQ(got.size(), kMost + kSlack);
      for (std::size_t i = 0; i < n; ++i) {
        ASSERT_EQ(got[i + offset], table[bytes[i + offset]])
            << "offset " << offset << ", " << n << " bytes, at " << i;
      }
      for (std::size_t i = 0; i < got.size(); ++i) {
        if (i >= offset && i < offset + n) continue;
        ASSERT_EQ(std::bit_cast<std::uint32_t>(got[i]), kSentinel)
            << "offset " << offset << ", " << n << " bytes: float " << i << " written";
      }
    }
  }
}

TEST(CudaKernels, NormaliseFlipChwEqualsTheHostOnTheVectorAndScalarPaths) {
  STOKE_CUDA_REQUIRE_DEVICES(1);
  const Device device = stoke::cuda::Backend::devices().front();
  const auto table = stoke::normalization_table(0.2860F, 0.3530F);
  stoke::cuda::kernels::ChannelTables tables{};
  for (std::size_t c = 0; c < 3; ++c) {
    for (std::size_t b = 0; b < 256; ++b) tables.values[c][b] = table[b] + static_cast<float>(c);
  }
  auto stager = stoke::cuda::Backend::make_stager(device, 1);
  const stoke::cuda::DeviceGuard guard(device);
  constexpr std::uint32_t kSentinel = 0xA5A5A5A5U;
  struct Case {
    stoke::cuda::kernels::ImageRowsShape shape;
    std::size_t offset;  // floats into the output: 1 leaves it unaligned
  };
  // An aligned output takes the float4 path (width 7: quads that cross lines), the unaligned
  // one the scalar path.
  for (const Case& test : {Case{{3, 5, 8, 3}, 0}, Case{{3, 5, 7, 3}, 0}, Case{{2, 4, 12, 1}, 0},
                           Case{{3, 5, 8, 3}, 1}}) {
    const auto& [rows, height, width, channels] = test.shape;
    const std::size_t count = std::size_t{rows} * height * width * channels;
    std::vector<std::uint8_t> bytes(count);
    for (std::size_t i = 0; i < count; ++i) {
      bytes[i] = static_cast<std::uint8_t>((i * 2654435761U) >> 24);
    }
    std::vector<std::uint32_t> flips(rows);
    for (std::size_t n = 0; n < rows; ++n) flips[n] = n % 2 == 0 ? 1 : 0;
    const auto input = stager->upload(std::as_bytes(std::span(bytes)));
    const auto flags = stager->upload(std::as_bytes(std::span(flips)));
    input.fence.wait();
    flags.fence.wait();
    const cudaStream_t stream = input.value.context()->copy_stream();
    Buffer out(device, (count + 2) * sizeof(float));
    STOKE_CUDA_CHECK(cudaMemsetAsync(out.data(), 0xA5, out.size(), stream));
    STOKE_CUDA_CHECK(stoke::cuda::kernels::normalize_flip_chw(
        static_cast<const std::uint8_t*>(input.value.data()),
        static_cast<const std::uint32_t*>(flags.value.data()), out.floats().data() + test.offset,
        test.shape, tables, stream));
    out.mark_written(stoke::cuda::Fence(device, stream));
    const auto got = download_floats(device, out);
    const std::string what = "width " + std::to_string(width) + ", " + std::to_string(channels) +
                             " channels, offset " + std::to_string(test.offset);
    for (std::size_t n = 0; n < rows; ++n) {
      for (std::size_t c = 0; c < channels; ++c) {
        for (std::size_t y = 0; y < height; ++y) {
          for (std::size_t x = 0; x < width; ++x) {
            const std::size_t from = flips[n] != 0 ? width - 1 - x : x;
            const float want =
                tables.values[c][bytes[((n * height + y) * width + from) * channels + c]];
            const std::size_t at = ((n * channels + c) * height + y) * width + x;
            ASSERT_EQ(got[at + test.offset], want) << what << ": image " << n << ", channel " << c
                                                   << ", row " << y << ", column " << x;
          }
        }
      }
    }
    for (std::size_t i = 0; i < got.size(); ++i) {
      if (i >= test.offset && i < test.offset + count) continue;
      ASSERT_EQ(std::bit_cast<std::uint32_t>(got[i]), kSentinel) << what << ": float " << i;
    }
  }
}

TEST(CudaRuntime, AGuardOnTheCurrentDeviceSwitchesNothing) {
  STOKE_CUDA_REQUIRE_DEVICES(1);
  const Device device = stoke::cuda::Backend::devices().back();
  STOKE_CUDA_CHECK(cudaSetDevice(device.ordinal));
  const stoke::cuda::DeviceGuard guard(device);
  EXPECT_FALSE(guard.switched());
}

TEST(CudaRuntime, AnEventHandedBackIsHandedOutAgainAndRecordsAnew) {
  STOKE_CUDA_REQUIRE_DEVICES(1);
  const auto device = stoke::cuda::Backend::devices().front();
  cudaEvent_t first = nullptr;
  {
    const stoke::cuda::Event event(device);
    first = event.handle();
  }
  stoke::cuda::Event again(device);
  EXPECT_EQ(again.handle(), first);  // from the pool, not made anew
  const stoke::cuda::Buffer buffer(device, 1 << 20);
  again.record(buffer.context()->copy_stream());
  EXPECT_EQ(cudaEventSynchronize(again.handle()), cudaSuccess);
  EXPECT_EQ(cudaEventQuery(again.handle()), cudaSuccess);
}

TEST(CudaRuntime, FreedMemoryStaysInTheDevicesPool) {
  STOKE_CUDA_REQUIRE_DEVICES(1);
  const Device device = stoke::cuda::Backend::devices().front();
  (void)stoke::cuda::detail::DeviceContext::of(device);
  cudaMemPool_t pool = nullptr;
  STOKE_CUDA_CHECK(cudaDeviceGetDefaultMemPool(&pool, device.ordinal));
  std::uint64_t threshold = 0;
  STOKE_CUDA_CHECK(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &threshold));
  EXPECT_EQ(threshold, UINT64_MAX);
}

TEST(CudaStaging, ReserveAllocatesEveryStagingBufferUpFront) {
  STOKE_CUDA_REQUIRE_DEVICES(1);
  const Device device = stoke::cuda::Backend::devices().front();
  auto stager = stoke::cuda::Backend::make_stager(device, 3);
  EXPECT_EQ(stager->staging_buffers(), 0u);
  stager->reserve(1 << 16);
  EXPECT_EQ(stager->staging_buffers(), 3u);
  std::vector<std::uint8_t> bytes(1 << 16, 7);
  const auto staged = stager->upload(std::as_bytes(std::span(bytes)));
  staged.fence.wait();
  EXPECT_EQ(stager->staging_buffers(), 3u);
}

}  // namespace

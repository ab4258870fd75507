// Recycled batch storage: cpu::BufferPool, cpu::HostBuffer, and the cpu::Tensor a batcher
// makes from them. Labelled `loader`, so it also runs under ASan (a buffer freed while a
// tensor still uses it, or given back to a pool that is gone, is a use after free there)
// and TSan (buffers acquired and given back from several threads).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include <stoke/stoke.hpp>

namespace {

using stoke::LabeledImage;
using stoke::cpu::BufferPool;
using stoke::cpu::Device;
using stoke::cpu::HostBuffer;
using stoke::cpu::ImageBatcher;
using stoke::cpu::StackBatcher;
using stoke::cpu::Tensor;

using Record = std::array<std::uint8_t, 3>;

std::vector<Record> records(std::size_t count, std::uint8_t first) {
  std::vector<Record> out(count);
  for (std::size_t i = 0; i < count; ++i) {
    const auto value = static_cast<std::uint8_t>(first + i);
    out[i] = {value, static_cast<std::uint8_t>(value + 1), static_cast<std::uint8_t>(value + 2)};
  }
  return out;
}

TEST(BufferPool, ReusesTheBufferOfADestroyedBatch) {
  const StackBatcher<float> batcher;
  const float* first = nullptr;
  {
    const Tensor<float> batch = batcher.batch(records(4, 0), Device{0});
    first = batch.values().data();
    EXPECT_EQ(batcher.pool.free_buffers(), 0u);
  }
  EXPECT_EQ(batcher.pool.free_buffers(), 1u);
  const Tensor<float> again = batcher.batch(records(4, 10), Device{0});
  EXPECT_EQ(again.values().data(), first);
  EXPECT_EQ(batcher.pool.free_buffers(), 0u);
}

TEST(BufferPool, IsSharedByCopiesOfTheBatcher) {
  const ImageBatcher batcher;
  const ImageBatcher copy = batcher;  // as a loader copies it into its workers
  const std::array<std::uint8_t, 2> pixels{0, 255};
  const float* first = nullptr;
  {
    const auto batch = copy.batch({LabeledImage{pixels, 1}}, Device{0});
    first = batch.inputs.values().data();
  }
  EXPECT_EQ(batcher.pool.free_buffers(), 1u);
  const auto batch = batcher.batch({LabeledImage{pixels, 2}}, Device{0});
  EXPECT_EQ(batch.inputs.values().data(), first);
  EXPECT_THAT(batch.inputs.values(), ::testing::ElementsAre(0.0f, 1.0f));
}

TEST(BufferPool, RecycledBatchesHoldOnlyTheirOwnValues) {
  const StackBatcher<float> batcher;
  {
    const auto batch = batcher.batch(records(2, 100), Device{0});
  }
  const auto batch = batcher.batch(records(2, 1), Device{0});
  EXPECT_THAT(batch.values(), ::testing::ElementsAre(1.0f, 2.0f, 3.0f, 2.0f, 3.0f, 4.0f));
}

TEST(BufferPool, NeverHoldsMoreFreeBuffersThanItsCapacity) {
  const BufferPool pool(2);
  {
    std::vector<HostBuffer> buffers;
    for (std::size_t i = 0; i < 5; ++i) buffers.push_back(pool.acquire(64));
    for (std::size_t i = 0; i < 3; ++i) buffers.push_back(pool.acquire(1000 + i * 1000));
  }
  EXPECT_EQ(pool.free_buffers(), 2u);
  EXPECT_EQ(pool.capacity(), 2u);
}

TEST(BufferPool, KeepsTheMostRecentlyFreedBuffers) {
  const BufferPool pool(1);
  std::optional<HostBuffer> old = pool.acquire(64);
  std::optional<HostBuffer> recent = pool.acquire(4096);
  const std::byte* recent_data = recent->data();
  old.reset();
  recent.reset();  // evicts the 64-byte buffer
  EXPECT_EQ(pool.free_buffers(), 1u);
  EXPECT_EQ(pool.acquire(4096).data(), recent_data);
}

TEST(BufferPool, WithCapacityZeroKeepsNothing) {
  const BufferPool pool(0);
  {
    const HostBuffer buffer = pool.acquire(64);
  }
  EXPECT_EQ(pool.free_buffers(), 0u);
}

TEST(BufferPool, ReusesOnlyBuffersAtMostTwiceTheRequestedSize) {
  const BufferPool pool;
  {
    const HostBuffer buffer = pool.acquire(1000);
  }
  const HostBuffer small = pool.acquire(100);  // a 1000-byte buffer would waste too much
  EXPECT_EQ(small.size(), 100u);
  EXPECT_EQ(pool.free_buffers(), 1u);
  const HostBuffer fitting = pool.acquire(600);
  EXPECT_EQ(fitting.size(), 1000u);
  EXPECT_EQ(pool.free_buffers(), 0u);
}

TEST(BufferPool, AlignsBuffersToACacheLine) {
  const BufferPool pool;
  const HostBuffer small = pool.acquire(3);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(small.data()) % 64, 0u);
  HostBuffer large = pool.acquire((std::size_t{5} << 20) + 1);  // advised to use huge pages
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(large.data()) % 64, 0u);
  large.data()[large.size() - 1] = std::byte{1};
  EXPECT_EQ(pool.acquire(0).data(), nullptr);
}

TEST(BufferPool, MovedBuffersAreGivenBackOnce) {
  const BufferPool pool;
  {
    HostBuffer a = pool.acquire(64);
    HostBuffer b = std::move(a);
    HostBuffer c = pool.acquire(128);
    c = std::move(b);  // gives c's 128 bytes back
    EXPECT_EQ(pool.free_buffers(), 1u);
    EXPECT_EQ(a.data(), nullptr);
  }
  EXPECT_EQ(pool.free_buffers(), 2u);
}

TEST(BufferPool, ServesSeveralThreadsAtOnce) {
  const BufferPool pool(3);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([pool, t] {  // a copy of the handle, as workers hold copies of a batcher
      for (int i = 0; i < 500; ++i) {
        HostBuffer buffer = pool.acquire(256 + static_cast<std::size_t>(t % 2) * 512);
        buffer.data()[0] = std::byte{1};
      }
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_LE(pool.free_buffers(), 3u);
  EXPECT_GE(pool.free_buffers(), 1u);
}

/// Memory a device "reads" until the test says it is done: it counts what the pool asks of
/// it. `wait_idle` marks the block idle (as a signalled copy would) and counts the wait.
class DeviceReadMemory final : public stoke::HostMemory {
 public:
  std::byte* allocate(std::size_t bytes) override {
    ++allocations;
    std::byte* data = stoke::pageable_memory()->allocate(bytes);
    busy[data] = false;
    return data;
  }
  void free(std::byte* data, std::size_t bytes) noexcept override {
    ++frees;
    busy.erase(data);
    stoke::pageable_memory()->free(data, bytes);
  }
  bool idle(const std::byte* data) const override { return !busy.at(data); }
  void wait_idle(const std::byte* data) const override {
    if (busy.at(data)) {
      ++waits;
      busy[data] = false;
    }
  }
  std::string_view name() const noexcept override { return "device-read"; }

  mutable std::map<const std::byte*, bool> busy;  ///< whether a device copy still reads it
  std::size_t allocations = 0;
  std::size_t frees = 0;
  mutable std::size_t waits = 0;
};

TEST(BufferPool, LentMemoryServesLaterBuffersAndFreesTheBlocksItHeldBefore) {
  const BufferPool pool(4);
  {
    const HostBuffer pageable = pool.acquire(64);
  }
  EXPECT_EQ(pool.free_buffers(), 1u);
  const auto memory = std::make_shared<DeviceReadMemory>();
  pool.lend(memory);
  EXPECT_EQ(pool.memory(), memory);
  EXPECT_EQ(pool.free_buffers(), 0u) << "the pageable block was freed";
  const HostBuffer lent = pool.acquire(64);
  EXPECT_EQ(lent.memory(), memory);
  EXPECT_EQ(memory->allocations, 1u);
  EXPECT_EQ(pool.allocations(), 2u);
}

TEST(BufferPool, HandsOutAnIdleBlockBeforeOneADeviceStillReads) {
  const BufferPool pool(4);
  const auto memory = std::make_shared<DeviceReadMemory>();
  pool.lend(memory);
  std::byte* read_by_device = nullptr;
  std::byte* idle = nullptr;
  {
    const HostBuffer first = pool.acquire(64);
    const HostBuffer second = pool.acquire(64);
    read_by_device = first.data();
    idle = second.data();
    memory->busy[read_by_device] = true;  // a copy reads it after the batch was dropped
  }
  const HostBuffer next = pool.acquire(64);
  EXPECT_EQ(next.data(), idle);
  EXPECT_EQ(memory->waits, 0u);
  EXPECT_EQ(memory->allocations, 2u);
}

TEST(BufferPool, WaitsForTheDeviceRatherThanAllocating) {
  const BufferPool pool(4);
  const auto memory = std::make_shared<DeviceReadMemory>();
  pool.lend(memory);
  std::byte* block = nullptr;
  {
    const HostBuffer batch = pool.acquire(64);
    block = batch.data();
    memory->busy[block] = true;
  }
  const HostBuffer next = pool.acquire(64);
  EXPECT_EQ(next.data(), block) << "the one block, once its copy completed";
  EXPECT_EQ(memory->waits, 1u);
  EXPECT_EQ(memory->allocations, 1u);
}

TEST(BufferPool, ReserveFillsThePoolSoBatchesAllocateNothing) {
  const BufferPool pool(3);
  const auto memory = std::make_shared<DeviceReadMemory>();
  pool.lend(memory);
  pool.reserve(256);
  EXPECT_EQ(pool.free_buffers(), 3u);
  EXPECT_EQ(memory->allocations, 3u);
  for (int round = 0; round < 5; ++round) {
    const HostBuffer a = pool.acquire(200);
    const HostBuffer b = pool.acquire(256);
    const HostBuffer c = pool.acquire(129);
  }
  EXPECT_EQ(memory->allocations, 3u);
  EXPECT_EQ(pool.allocations(), 3u);
}

TEST(CpuTensor, OutlivesTheBatcherAndItsPool) {
  std::optional<StackBatcher<float>> batcher(std::in_place);
  std::optional<Tensor<float>> batch = batcher->batch(records(3, 7), Device{2});
  {
    const auto freed = batcher->batch(records(3, 0), Device{0});
    // dropped here: the pool holds one buffer
  }
  batcher.reset();  // the last handle to the pool: its free buffers are freed
  EXPECT_THAT(batch->values(),
              ::testing::ElementsAre(7.0f, 8.0f, 9.0f, 8.0f, 9.0f, 10.0f, 9.0f, 10.0f, 11.0f));
  EXPECT_EQ(batch->device(), Device{2});
  batch.reset();  // the pool is gone: the buffer is freed, not given back
}

TEST(CpuTensor, OutlivesTheLoaderThatMadeIt) {
  struct Rows {
    std::size_t size() const { return 12; }
    std::array<float, 2> get(std::size_t i) const { return {float(i), float(10 * i)}; }
  };
  std::optional<Tensor<float>> kept;
  {
    auto loader = stoke::DataLoaderBuilder<stoke::cpu::Backend, StackBatcher<float>>({})
                      .batch_size(4)
                      .num_workers(2)
                      .build(Rows{});
    auto range = loader.iter();
    kept = std::move(range.begin()->data);
  }  // the range, the loader, its workers and the batches they prefetched are gone
  EXPECT_EQ(kept->shape(), (std::vector<std::size_t>{4, 2}));
  EXPECT_THAT(kept->values(),
              ::testing::ElementsAre(0.0f, 0.0f, 1.0f, 10.0f, 2.0f, 20.0f, 3.0f, 30.0f));
}

TEST(CpuTensor, PlainTensorsAreZeroFilled) {
  const Tensor<double> tensor({2, 2}, Device{0});
  EXPECT_THAT(tensor.values(), ::testing::Each(0.0));
}

TEST(CpuTensor, CopiesAreDeepAndMovesTakeTheStorage) {
  const StackBatcher<float> batcher;
  Tensor<float> batch = batcher.batch(records(2, 1), Device{1});
  Tensor<float> copy = batch;
  EXPECT_NE(copy.values().data(), batch.values().data());
  copy.values()[0] = 50.0f;
  EXPECT_EQ(batch.values()[0], 1.0f);
  EXPECT_EQ(copy.shape(), batch.shape());
  EXPECT_EQ(copy.device(), Device{1});

  const float* storage = batch.values().data();
  Tensor<float> moved = std::move(batch);
  EXPECT_EQ(moved.values().data(), storage);
  EXPECT_EQ(batch.size(), 0u);  // NOLINT(bugprone-use-after-move): moved-from is empty
  copy = std::move(moved);      // copy's own storage is freed (it came from no pool)
  EXPECT_EQ(copy.values().data(), storage);
  EXPECT_EQ(batcher.pool.free_buffers(), 0u);
  copy = Tensor<float>({1}, Device{0});  // the batch's storage goes back to the pool
  EXPECT_EQ(batcher.pool.free_buffers(), 1u);
}

}  // namespace

// The conformance suite: one typed suite over every backend this executable was built for
// (conformance_backends.hpp). Prefetched batches land on the right device with the right
// contents, fences are respected, memory in flight stays bounded, a split gives every device
// its own part, and failures reach the consumer as stoke::DataError.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <tuple>
#include <type_traits>
#include <vector>

#include <stoke/data/prefetch.hpp>
#include <stoke/stoke.hpp>

#include "conformance_backends.hpp"
#include "conformance_traits.hpp"
#include "stoke_test_support.hpp"

namespace {

using namespace std::chrono_literals;
using stoke::testing::BackendNames;
using stoke::testing::ConformanceTraits;
using stoke::testing::device_of;
using stoke::testing::expected_rows;
using stoke::testing::HostRows;
using stoke::testing::IotaDataset;
using stoke::testing::read_floats;
using stoke::testing::RowsBatcher;

template <class B>
class Conformance : public ::testing::Test {
 protected:
  using Traits = ConformanceTraits<B>;
  using Device = stoke::device_t<B>;
  static constexpr bool host_memory = stoke::is_host_memory_backend<B>;

  void SetUp() override {
    Traits::set_up();
    if (const std::string why = Traits::skip_reason(); !why.empty()) GTEST_SKIP() << why;
  }
  void TearDown() override { Traits::tear_down(); }

  static auto builder(RowsBatcher batcher = {}) {
    return stoke::DataLoaderBuilder<B, RowsBatcher>(std::move(batcher));
  }
};
TYPED_TEST_SUITE(Conformance, ConformanceBackends, BackendNames);

/// `size` bytes counting up from `seed`.
std::vector<std::byte> pattern(std::size_t size, unsigned seed) {
  std::vector<std::byte> bytes(size);
  for (std::size_t i = 0; i < size; ++i)
    bytes[i] = std::byte(static_cast<unsigned char>(seed + 3 * i));
  return bytes;
}

TYPED_TEST(Conformance, PrefetchedLoaderIsADataLoader) {
  auto prefetched = stoke::prefetch_to_device<TypeParam>(
      TestFixture::builder().batch_size(4).num_workers(1).build(IotaDataset{40}), 2);
  static_assert(stoke::SplitSource<decltype(prefetched)>);
  EXPECT_EQ(prefetched.num_items(), 40u);
  auto slice = prefetched.slice(8, 16);
  std::vector<std::size_t> indices;
  for (auto& batch : slice.iter())
    indices.insert(indices.end(), batch.indices.begin(), batch.indices.end());
  EXPECT_THAT(indices, ::testing::ElementsAre(8, 9, 10, 11, 12, 13, 14, 15));
  EXPECT_THROW(
      (void)stoke::prefetch_to_device<TypeParam>(TestFixture::builder().build(IotaDataset{4}), 0),
      stoke::UsageError);
}

TYPED_TEST(Conformance, BatchesLandOnTheDeviceTheLoaderIsSetTo) {
  const auto devices = TestFixture::Traits::devices(2);
  auto loader = TestFixture::builder().batch_size(4).num_workers(2).build(IotaDataset{40});
  loader.set_device(devices[1]);
  auto prefetched = stoke::prefetch_to_device<TypeParam>(loader, 2);
  std::size_t batches = 0;
  for (auto& batch : prefetched.iter()) {
    EXPECT_EQ(device_of<TypeParam>(batch.data), devices[1]) << "step " << batch.step;
    ++batches;
  }
  EXPECT_EQ(batches, 10u);
}

TYPED_TEST(Conformance, BatchesKeepTheirContentsOrderAndProvenance) {
  const auto make = [] {
    return TestFixture::builder().batch_size(4).num_workers(2).shuffle(5).pad().build(
        IotaDataset{42});
  };
  auto reference = make();
  auto prefetched = stoke::prefetch_to_device<TypeParam>(make(), 3);
  for (int epoch = 0; epoch < 2; ++epoch) {
    using Provenance = std::tuple<std::size_t, std::size_t, std::size_t, std::vector<std::size_t>>;
    std::vector<Provenance> expected;
    for (auto& batch : reference.iter()) {
      expected.emplace_back(batch.epoch, batch.step, batch.padding, batch.indices);
    }
    std::size_t k = 0;
    for (auto& batch : prefetched.iter()) {
      ASSERT_LT(k, expected.size());
      EXPECT_EQ(Provenance(batch.epoch, batch.step, batch.padding, batch.indices), expected[k]);
      EXPECT_EQ(read_floats<TypeParam>(batch.data), expected_rows(batch.indices));
      ++k;
    }
    EXPECT_EQ(k, expected.size());
    EXPECT_EQ(std::get<2>(expected.back()), 2u) << "42 items in batches of 4: 2 padded";
  }
}

TYPED_TEST(Conformance, TheConsumerGetsABatchOnlyOnceItsUploadCompleted) {
  auto prefetched = stoke::prefetch_to_device<TypeParam>(
      TestFixture::builder().batch_size(2).num_workers(1).build(IotaDataset{20}), 4);
  std::size_t batches = 0;
  for (auto& batch : prefetched.iter()) {
    EXPECT_TRUE(TestFixture::Traits::uploaded(batch.data)) << "step " << batch.step;
    EXPECT_EQ(read_floats<TypeParam>(batch.data), expected_rows(batch.indices));
    ++batches;
  }
  EXPECT_EQ(batches, 10u);
}

TYPED_TEST(Conformance, AStagingBufferIsRefilledOnlyAfterItsCopysFence) {
  if constexpr (TestFixture::host_memory) {
    GTEST_SKIP() << TypeParam::name() << " works on host memory: nothing is staged";
  } else {
    const auto devices = TestFixture::Traits::devices(1);
    const auto stager = TypeParam::make_stager(devices[0], 1);
    auto first_bytes = pattern(1 << 20, 1);
    auto second_bytes = pattern(1 << 20, 2);
    const auto first_sent = first_bytes;
    const auto second_sent = second_bytes;
    auto first = stager->upload(first_bytes);
    std::ranges::fill(first_bytes, std::byte{0});  // the caller may reuse its bytes at once
    auto second = stager->upload(second_bytes);    // needs the one staging buffer again
    std::ranges::fill(second_bytes, std::byte{0});
    EXPECT_EQ(stager->download(first.value), first_sent);
    EXPECT_EQ(stager->download(second.value), second_sent);
    EXPECT_EQ(stager->staging_buffers(), 1u);
    EXPECT_EQ(stager->capacity(), 1u);
  }
}

TYPED_TEST(Conformance, PrefetchingKeepsTheBatchesInFlightBounded) {
  RowsBatcher batcher;
  const auto made = batcher.made;
  const std::size_t queue_depth = 2;
  const std::size_t depth = 3;
  auto loader = TestFixture::builder(batcher)
                    .batch_size(2)
                    .num_workers(2)
                    .queue_depth(queue_depth)
                    .build(IotaDataset{60});
  auto prefetched = stoke::prefetch_to_device<TypeParam>(loader, depth);
  // Made but not taken, once everything upstream filled up (a slow step): `depth` uploads
  // queued (none where batches pass through), plus the queue depth.
  const std::size_t ahead = (TestFixture::host_memory ? 0 : depth) + queue_depth;
  std::size_t taken = 0;
  for (auto& batch : prefetched.iter()) {
    ++taken;
    ASSERT_TRUE(made->wait_for_at_least(std::min<std::size_t>(taken + ahead, 30), 10s))
        << "upstream never filled up by step " << batch.step;
    EXPECT_LE(made->load() - taken, depth + queue_depth) << "step " << batch.step;
    if constexpr (!TestFixture::host_memory) {
      ASSERT_NE(prefetched.stager(), nullptr);
      EXPECT_LE(prefetched.stager()->staging_buffers(), depth);
    }
  }
  EXPECT_EQ(taken, 30u);
}

TYPED_TEST(Conformance, SplitGivesEveryDeviceItsOwnBatches) {
  const auto devices = TestFixture::Traits::devices(2);
  auto loader = TestFixture::builder().batch_size(3).num_workers(2).shuffle(9).drop_last().build(
      IotaDataset{50});
  auto parts = stoke::split(stoke::prefetch_to_device<TypeParam>(loader, 2), devices);
  ASSERT_EQ(parts.size(), 2u);
  std::vector<std::vector<std::size_t>> seen(parts.size());
  std::vector<std::size_t> batches(parts.size(), 0);
  std::vector<std::thread> threads;  // one thread per device, as a learner runs them
  for (std::size_t k = 0; k < parts.size(); ++k) {
    threads.emplace_back([&, k] {
      for (auto& batch : parts[k].iter()) {
        EXPECT_EQ(device_of<TypeParam>(batch.data), devices[k]);
        EXPECT_EQ(read_floats<TypeParam>(batch.data), expected_rows(batch.indices));
        seen[k].insert(seen[k].end(), batch.indices.begin(), batch.indices.end());
        ++batches[k];
      }
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(batches[0], 8u);
  EXPECT_EQ(batches[1], 8u);
  std::set<std::size_t> all(seen[0].begin(), seen[0].end());
  all.insert(seen[1].begin(), seen[1].end());
  EXPECT_EQ(all.size(), 48u) << "disjoint parts covering 16 batches of 3";
}

TYPED_TEST(Conformance, ABatcherFailureReachesTheConsumerAsDataError) {
  RowsBatcher batcher;
  batcher.fail_on = 9;
  auto prefetched = stoke::prefetch_to_device<TypeParam>(
      TestFixture::builder(batcher).batch_size(4).num_workers(2).build(IotaDataset{40}), 2);
  std::vector<std::size_t> steps;
  try {
    for (auto& batch : prefetched.iter()) steps.push_back(batch.step);
    FAIL() << "expected a DataError";
  } catch (const stoke::DataError& error) {
    EXPECT_EQ(error.context().activity, "batch");
    EXPECT_EQ(error.context().step, 2u);
    EXPECT_EQ(error.context().device, stoke::device_name(typename TestFixture::Device{}));
    EXPECT_THAT(error.what(), ::testing::HasSubstr("the batcher failed on item 9"));
  }
  EXPECT_THAT(steps, ::testing::ElementsAre(0, 1));
}

TYPED_TEST(Conformance, AnUploadFailureReachesTheConsumerAsDataError) {
  if constexpr (TestFixture::host_memory) {
    GTEST_SKIP() << TypeParam::name() << " works on host memory: nothing is uploaded";
  } else {
    const auto stage = [](auto& stager, const HostRows<typename TestFixture::Device>& data) {
      if (!data.rows.empty() && data.rows.front() == 80.0F) {
        throw std::runtime_error("no room on the device");
      }
      return stager.upload(stoke::host_bytes(data));
    };
    auto prefetched = stoke::prefetch_to_device<TypeParam>(
        TestFixture::builder().batch_size(4).num_workers(2).build(IotaDataset{40}), 2, stage);
    std::vector<std::size_t> steps;
    try {
      for (auto& batch : prefetched.iter()) steps.push_back(batch.step);
      FAIL() << "expected a DataError";
    } catch (const stoke::DataError& error) {
      EXPECT_EQ(error.context().activity, "upload");
      EXPECT_EQ(error.context().step, 2u);
      EXPECT_EQ(error.context().index, 8u);
      EXPECT_THAT(error.what(), ::testing::HasSubstr("no room on the device"));
      EXPECT_THROW(std::rethrow_if_nested(error), std::runtime_error);
    }
    EXPECT_THAT(steps, ::testing::ElementsAre(0, 1));
  }
}

TYPED_TEST(Conformance, AFailedDeviceCopyReachesTheConsumerAsDataError) {
  using Traits = typename TestFixture::Traits;
  if constexpr (requires { Traits::fail_copy(std::size_t{1}); }) {
    Traits::fail_copy(1);
    auto prefetched = stoke::prefetch_to_device<TypeParam>(
        TestFixture::builder().batch_size(4).num_workers(1).build(IotaDataset{40}), 2);
    std::vector<std::size_t> steps;
    try {
      for (auto& batch : prefetched.iter()) steps.push_back(batch.step);
      FAIL() << "expected a DataError";
    } catch (const stoke::DataError& error) {
      EXPECT_EQ(error.context().activity, "fence");
      EXPECT_EQ(error.context().step, 1u);
      EXPECT_THAT(error.what(), ::testing::HasSubstr("failed copy 1"));
    }
    EXPECT_THAT(steps, ::testing::ElementsAre(0));
  } else {
    GTEST_SKIP() << TypeParam::name() << " offers no way to make device work fail";
  }
}

TYPED_TEST(Conformance, HostBackendsPassBatchesThroughWithoutACopy) {
  auto loader = TestFixture::builder().batch_size(5).num_workers(1).build(IotaDataset{20});
  auto prefetched = stoke::prefetch_to_device<TypeParam>(loader, 2);
  for (auto& batch : prefetched.iter()) {
    if constexpr (TestFixture::host_memory) {
      static_assert(std::is_same_v<decltype(prefetched), decltype(loader)>);
      EXPECT_EQ(batch.data.rows.data(), batch.data.origin) << "the batcher's own rows";
    } else {
      static_assert(
          std::is_same_v<std::remove_cvref_t<decltype(batch.data)>, typename TypeParam::Buffer>);
      EXPECT_EQ(batch.data.size(), 5u * 3 * sizeof(float));
    }
  }
}

// No copy on the host: the stager lends its staging memory to the batcher's pool, the batcher
// writes its rows there, and the upload is the device's copy alone. The bytes are the ones
// the batcher wrote, blocks are reused only after their copies (the delayed backend's lazy
// engine would otherwise read rows of a later batch), and nothing is allocated after the
// pool was reserved.
TYPED_TEST(Conformance, BatchesAreUploadedFromWhereTheBatcherWroteThemWithoutAHostCopy) {
  const stoke::testing::PooledRowsBatcher batcher;
  auto loader = stoke::DataLoaderBuilder<TypeParam, stoke::testing::PooledRowsBatcher>(batcher)
                    .batch_size(4)
                    .num_workers(2)
                    .queue_depth(2)
                    .shuffle(3)
                    .build(IotaDataset{40});
  auto prefetched = stoke::prefetch_to_device<TypeParam>(loader, 2);
  constexpr std::size_t batch_bytes = 4 * 3 * sizeof(float);
  if constexpr (!TestFixture::host_memory) {
    prefetched.reserve(batch_bytes);
    EXPECT_EQ(batcher.pool.memory(), prefetched.stager()->lent_memory());
  }
  const std::size_t reserved = batcher.pool.allocations();
  std::size_t batches = 0;
  for (int epoch = 0; epoch < 3; ++epoch) {
    for (auto& batch : prefetched.iter()) {
      EXPECT_EQ(read_floats<TypeParam>(batch.data), expected_rows(batch.indices))
          << "epoch " << epoch << " step " << batch.step;
      if constexpr (TestFixture::host_memory) {
        EXPECT_EQ(batch.data.values().data(), batch.data.origin) << "the batcher's own rows";
      }
      ++batches;
    }
  }
  EXPECT_EQ(batches, 30u);
  if constexpr (!TestFixture::host_memory) {
    EXPECT_EQ(prefetched.stager()->host_copies(), 0u) << "an upload copied on the host";
    EXPECT_EQ(reserved, batcher.pool.capacity()) << "reserve fills the pool";
    EXPECT_EQ(batcher.pool.allocations(), reserved) << "allocated after the reserve";
  }
}

// A pool of one block: every batch is written into the block the previous batch's copy reads,
// so the batcher must wait for that copy's fence (else the delayed engine copies rows of the
// next batch).
TYPED_TEST(Conformance, ALentBlockIsWrittenAgainOnlyAfterItsCopysFence) {
  stoke::testing::PooledRowsBatcher batcher;
  batcher.pool = stoke::cpu::BufferPool(1);
  auto loader = stoke::DataLoaderBuilder<TypeParam, stoke::testing::PooledRowsBatcher>(batcher)
                    .batch_size(4)
                    .num_workers(1)
                    .build(IotaDataset{24});
  auto prefetched = stoke::prefetch_to_device<TypeParam>(loader, 3);
  std::vector<std::vector<float>> seen;
  std::vector<std::vector<std::size_t>> indices;
  std::vector<decltype(prefetched.iter().begin()->data)> held;  // every batch kept to the end
  for (auto& batch : prefetched.iter()) {
    indices.push_back(batch.indices);
    held.push_back(std::move(batch.data));
  }
  ASSERT_EQ(held.size(), 6u);
  for (std::size_t k = 0; k < held.size(); ++k) {
    EXPECT_EQ(read_floats<TypeParam>(held[k]), expected_rows(indices[k])) << "batch " << k;
  }
  if constexpr (!TestFixture::host_memory) {
    EXPECT_EQ(prefetched.stager()->host_copies(), 0u);
  }
}

// One road: a labelled host batch reaches a device through prefetch_to_device's default
// stage as the backend's DeviceImageBatch, inputs and labels on the device once `ready`
// signalled, the inputs uploaded from where the batcher wrote them (only the labels, a
// std::vector, are copied into staging).
TYPED_TEST(Conformance, LabelledBatchesReachTheDeviceInputsAndLabels) {
  if constexpr (TestFixture::host_memory) {
    GTEST_SKIP() << "a host-memory backend passes batches through (see "
                    "BatchesAreUploadedFromWhereTheBatcherWroteThemWithoutAHostCopy)";
  } else {
    const stoke::testing::LabeledRowsBatcher batcher;
    const auto device = TestFixture::Traits::devices(2).back();
    auto loader = stoke::DataLoaderBuilder<TypeParam, stoke::testing::LabeledRowsBatcher>(batcher)
                      .batch_size(4)
                      .num_workers(2)
                      .shuffle(9)
                      .pad()
                      .device(device)
                      .build(IotaDataset{18});
    auto prefetched = stoke::prefetch_to_device<TypeParam>(loader, 2);
    using Data = std::remove_cvref_t<decltype(prefetched.iter().begin()->data)>;
    static_assert(
        std::is_same_v<
            Data, stoke::DeviceImageBatch<typename TypeParam::Buffer, typename TypeParam::Fence>>);
    std::size_t batches = 0;
    for (auto& batch : prefetched.iter()) {
      const Data& data = batch.data;
      EXPECT_TRUE(TestFixture::Traits::uploaded(data.inputs)) << "step " << batch.step;
      EXPECT_EQ(device_of<TypeParam>(data.inputs), device);
      EXPECT_EQ(device_of<TypeParam>(data.device_labels), device);
      EXPECT_EQ(data.rows, batch.indices.size());
      EXPECT_EQ(data.row_size, 3u);
      EXPECT_EQ(read_floats<TypeParam>(data.inputs), expected_rows(batch.indices));
      std::vector<std::int32_t> labels;
      for (const std::size_t index : batch.indices) {
        labels.push_back(static_cast<std::int32_t>(index % 7));
      }
      EXPECT_EQ(data.labels, labels);
      EXPECT_EQ(stoke::testing::read_ints<TypeParam>(data.device_labels), labels);
      ++batches;
    }
    EXPECT_EQ(batches, 5u);
    EXPECT_EQ(prefetched.stager()->host_copies(), batches) << "one copy a batch: its labels";
  }
}

TYPED_TEST(Conformance, DroppingARangeMidEpochStopsItsUploadsCleanly) {
  auto prefetched = stoke::prefetch_to_device<TypeParam>(
      TestFixture::builder().batch_size(2).num_workers(2).build(IotaDataset{40}), 3);
  {
    auto range = prefetched.iter();
    auto it = range.begin();
    ++it;
    EXPECT_EQ(it->step, 1u);
  }  // dropped with uploads in flight
  std::size_t batches = 0;
  for (auto& batch : prefetched.iter()) {
    EXPECT_EQ(batch.epoch, 1u);
    EXPECT_EQ(read_floats<TypeParam>(batch.data), expected_rows(batch.indices));
    ++batches;
  }
  EXPECT_EQ(batches, 20u);
}

}  // namespace

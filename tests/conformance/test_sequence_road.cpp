// The one road of packed sequences, on every backend this executable was built for: a planned
// loader's PackedBatch (tokens, positions, segment ids, cu_seqlens, loss mask) reaches each
// device of a split through prefetch_to_device's default stage, byte for byte, once its fence
// signalled, uploaded from the pooled block the batcher wrote it in (no host copy); a
// host-memory backend gets the batcher's own batch, not a copy.
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include <stoke/stoke.hpp>

#include "conformance_backends.hpp"
#include "conformance_traits.hpp"

namespace {

using stoke::testing::BackendNames;
using stoke::testing::ConformanceTraits;

/// Documents of tokens `1000 d + t`, as a dataset of token spans; cheap to copy.
struct RoadDocuments {
  std::shared_ptr<const std::vector<std::vector<std::int32_t>>> documents;

  explicit RoadDocuments(const std::vector<std::int32_t>& lengths)
      : documents([&] {
          auto made = std::make_shared<std::vector<std::vector<std::int32_t>>>();
          for (std::size_t d = 0; d < lengths.size(); ++d) {
            auto& document = made->emplace_back();
            for (std::int32_t t = 0; t < lengths[d]; ++t) {
              document.push_back(static_cast<std::int32_t>(1000 * d) + t);
            }
          }
          return made;
        }()) {}
  [[nodiscard]] std::size_t size() const noexcept { return documents->size(); }
  [[nodiscard]] std::span<const std::int32_t> get(std::size_t i) const { return (*documents)[i]; }
};

template <class B>
class SequenceRoad : public ::testing::Test {
 protected:
  using Traits = ConformanceTraits<B>;
  void SetUp() override {
    Traits::set_up();
    if (const std::string why = Traits::skip_reason(); !why.empty()) GTEST_SKIP() << why;
  }
  void TearDown() override { Traits::tear_down(); }
};
TYPED_TEST_SUITE(SequenceRoad, ConformanceBackends, BackendNames);

/// The bytes of `values`.
template <class T>
std::vector<std::byte> bytes_of(const T& values) {
  const auto bytes = std::as_bytes(std::span(values));
  return {bytes.begin(), bytes.end()};
}

/// The bytes of a device buffer of backend `B`, read back to the host.
template <class B>
std::vector<std::byte> device_bytes(const typename B::Buffer& buffer) {
  const auto bytes = B::make_stager(buffer.device(), 1)->download(buffer);
  return {bytes.begin(), bytes.end()};
}

TYPED_TEST(SequenceRoad, PackedBatchesReachEveryDeviceOfASplitByteForByte) {
  using Traits = typename TestFixture::Traits;
  using Batcher = stoke::PlannedBatcher<stoke::ConcatPlanner>;
  const std::vector<std::int32_t> lengths = {7, 3, 12, 1, 9, 5, 20, 2, 8, 4, 11, 6};
  const RoadDocuments documents(lengths);
  const Batcher batcher(
      stoke::ConcatPlanner(
          stoke::DocumentLengths(lengths),
          {.sequence_length = 8, .rows_per_batch = 2, .window_batches = 2, .seed = 5}),
      -1);
  stoke::LoaderOptions options;
  options.remainder = stoke::Remainder::pad;
  options.num_workers = 2;
  const stoke::MultiThreadLoader<RoadDocuments, Batcher, TypeParam> loader(documents, batcher,
                                                                           options);
  const auto devices = Traits::devices(2);
  const std::size_t planned = batcher.epoch_batches(0);
  ASSERT_EQ(planned, 6u);  // 88 tokens in rows of 8, two rows a batch
  std::size_t batches = 0;
  for (auto& share : stoke::split(loader, devices)) {
    const auto device = share.device();
    auto prefetched = stoke::prefetch_to_device<TypeParam>(share, 2);
    for (auto& batch : prefetched.iter()) {
      const stoke::PackedBatch host =
          batcher.batch_planned(documents, 0, batch.indices.at(0), batch.padding == 1, device);
      const auto& data = batch.data;
      ASSERT_EQ(data.rows, host.rows);
      ASSERT_EQ(data.width, host.width);
      if constexpr (stoke::is_host_memory_backend<TypeParam>) {
        static_assert(std::is_same_v<std::remove_cvref_t<decltype(data)>, stoke::PackedBatch>);
        EXPECT_EQ(data.tokens, host.tokens);
        EXPECT_EQ(data.positions, host.positions);
        EXPECT_EQ(data.segment_ids, host.segment_ids);
        EXPECT_EQ(data.cu_seqlens, host.cu_seqlens);
        EXPECT_EQ(data.loss_mask, host.loss_mask);
      } else {
        static_assert(
            std::is_same_v<
                std::remove_cvref_t<decltype(data)>,
                stoke::DeviceSequenceBatch<typename TypeParam::Buffer, typename TypeParam::Fence>>);
        EXPECT_TRUE(data.ready.ready()) << "taken before its upload completed";
        for (const auto* buffer : {&data.tokens, &data.positions, &data.segment_ids,
                                   &data.cu_seqlens, &data.loss_mask}) {
          EXPECT_TRUE(Traits::uploaded(*buffer));
          EXPECT_EQ(buffer->device(), device);
        }
        EXPECT_EQ(device_bytes<TypeParam>(data.tokens), bytes_of(host.tokens));
        EXPECT_EQ(device_bytes<TypeParam>(data.positions), bytes_of(host.positions));
        EXPECT_EQ(device_bytes<TypeParam>(data.segment_ids), bytes_of(host.segment_ids));
        EXPECT_EQ(device_bytes<TypeParam>(data.cu_seqlens), bytes_of(host.cu_seqlens));
        EXPECT_EQ(device_bytes<TypeParam>(data.loss_mask), bytes_of(host.loss_mask));
      }
      ++batches;
    }
    if constexpr (!stoke::is_host_memory_backend<TypeParam>) {
      // The tensors lie in one block of the PlannedBatcher's pool, which the prefetch lent the
      // stager's memory: every upload reads them where they were written, with no host copy.
      EXPECT_EQ(prefetched.stager()->host_copies(), 0u);
    }
  }
  EXPECT_EQ(batches, planned);
}

}  // namespace

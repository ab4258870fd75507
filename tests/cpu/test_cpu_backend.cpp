// The CPU backend: its devices, tensors that map to Eigen, the stacking batcher.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <array>
#include <cstddef>
#include <span>
#include <unordered_set>
#include <vector>

#include <stoke/cpu/eigen.hpp>
#include <stoke/stoke.hpp>

namespace {

using stoke::cpu::Backend;
using stoke::cpu::Device;
using stoke::cpu::StackBatcher;
using stoke::cpu::Tensor;

TEST(CpuBackend, ListsTheRequestedLogicalDevices) {
  const auto devices = Backend::devices(3);
  EXPECT_EQ(devices, (std::vector<Device>{{0}, {1}, {2}}));
  EXPECT_EQ(Backend::name(), "cpu");
}

TEST(CpuBackend, DevicesCanKeyAHashSet) {
  std::unordered_set<Device> set{{0}, {1}, {1}};
  EXPECT_EQ(set.size(), 2u);
}

TEST(CpuTensor, MatrixViewSharesMemory) {
  Tensor<float> tensor({2, 3, 2}, Device{1});
  EXPECT_EQ(tensor.size(), 12u);
  EXPECT_EQ(tensor.rows(), 2u);
  EXPECT_EQ(tensor.row_size(), 6u);
  auto matrix = stoke::cpu::matrix(tensor);
  EXPECT_EQ(matrix.data(), tensor.values().data());
  matrix(1, 4) = 5.0f;
  EXPECT_EQ(tensor.values()[10], 5.0f);
  EXPECT_EQ(tensor.row(1)[4], 5.0f);
  EXPECT_EQ(tensor.device(), Device{1});
}

TEST(StackBatcher, StacksNumbersIntoAVector) {
  const StackBatcher<double> batcher{.scale = 2.0, .offset = 1.0};
  const auto batch = batcher.batch(std::vector<int>{1, 2, 3}, Device{0});
  EXPECT_EQ(batch.shape(), (std::vector<std::size_t>{3}));
  EXPECT_THAT(batch.values(), ::testing::ElementsAre(3.0, 5.0, 7.0));
}

TEST(StackBatcher, StacksByteRecordsIntoNormalisedRowsOnTheDevice) {
  const std::array<std::byte, 2> a{std::byte{0}, std::byte{255}}, b{std::byte{51}, std::byte{102}};
  const StackBatcher<float> batcher{.scale = 1.0f / 255.0f};
  const auto batch =
      batcher.batch(std::vector<std::span<const std::byte>>{std::span(a), std::span(b)}, Device{3});
  EXPECT_EQ(batch.shape(), (std::vector<std::size_t>{2, 2}));
  EXPECT_THAT(batch.values(), ::testing::Pointwise(::testing::FloatEq(), {0.0f, 1.0f, 0.2f, 0.4f}));
  EXPECT_EQ(batch.device(), Device{3});
}

TEST(StackBatcher, RefusesSamplesOfDifferentLengthsNamingBoth) {
  const StackBatcher<float> batcher;
  try {
    (void)batcher.batch(std::vector<std::vector<int>>{{1, 2}, {3, 4}, {5}}, Device{0});
    FAIL() << "expected an InputError";
  } catch (const stoke::InputError& error) {
    EXPECT_THAT(error.what(), ::testing::HasSubstr("item 2 of the batch has 1 elements"));
    EXPECT_THAT(error.what(), ::testing::HasSubstr("item 0 has 2"));
  }
}

TEST(StackBatcher, WorksAsTheBatcherOfALoader) {
  struct Rows {
    std::size_t size() const { return 6; }
    std::array<float, 2> get(std::size_t i) const { return {float(i), float(10 * i)}; }
  };
  auto loader =
      stoke::DataLoaderBuilder<Backend, StackBatcher<float>>({}).batch_size(4).num_workers(2).build(
          Rows{});
  std::vector<std::size_t> rows;
  for (auto& batch : loader.iter()) {
    rows.push_back(batch.data.rows());
    EXPECT_EQ(stoke::cpu::matrix(batch.data)(0, 1), 10.0f * stoke::cpu::matrix(batch.data)(0, 0));
  }
  EXPECT_EQ(rows, (std::vector<std::size_t>{4, 2}));
}

}  // namespace

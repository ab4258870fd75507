// The concepts accept conforming types and reject near misses.
#include <gtest/gtest.h>

#include <ostream>
#include <string>
#include <vector>

#include <stoke/stoke.hpp>

#include "stoke_test_support.hpp"

namespace {

using stoke::testing::IotaDataset;
using stoke::testing::ItemsBatcher;

struct UnprintableDevice {
  int id = 0;
  friend bool operator==(const UnprintableDevice&, const UnprintableDevice&) = default;
};

struct UnhashableDevice {
  int id = 0;
  friend bool operator==(const UnhashableDevice&, const UnhashableDevice&) = default;
  friend std::ostream& operator<<(std::ostream& out, const UnhashableDevice&) { return out; }
};

struct BackendWithoutName {
  using Device = stoke::cpu::Device;
  static std::vector<Device> devices() { return {}; }
};

struct BackendWithoutDevices {
  using Device = stoke::cpu::Device;
  static std::string name() { return "x"; }
};

struct BackendWithWrongDeviceList {
  using Device = stoke::cpu::Device;
  static std::string name() { return "x"; }
  static std::vector<int> devices() { return {}; }
};

struct DatasetWithoutSize {
  int get(std::size_t) const { return 0; }
};

struct DatasetWithoutGet {
  std::size_t size() const { return 0; }
};

struct DatasetWithMutableGet {
  std::size_t size() const { return 0; }
  int get(std::size_t) { return 0; }
};

struct DatasetWithVoidGet {
  std::size_t size() const { return 0; }
  void get(std::size_t) const {}
};

struct BatcherWithoutDevice {
  int batch(std::vector<std::size_t>) const { return 0; }
};

struct BatcherWithMutableBatch {
  int batch(std::vector<std::size_t>, const stoke::cpu::Device&) { return 0; }
};

using CpuLoader = stoke::MultiThreadLoader<IotaDataset, ItemsBatcher, stoke::cpu::Backend>;
using CpuBatchLoader = stoke::BatchLoader<IotaDataset, ItemsBatcher, stoke::cpu::Backend>;

struct LoaderWithoutSlice {
  using device_type = stoke::cpu::Device;
  using batch_type = int;
  std::vector<int> iter() { return {}; }
  std::size_t num_items() const { return 0; }
  void set_device(const device_type&) {}
};

TEST(DeviceConcept, AcceptsCpuDevice) {
  EXPECT_TRUE(stoke::Device<stoke::cpu::Device>);
}

TEST(DeviceConcept, RejectsDeviceThatCannotBePrinted) {
  EXPECT_FALSE(stoke::Device<UnprintableDevice>);
}

TEST(DeviceConcept, RejectsDeviceThatCannotBeHashed) {
  EXPECT_FALSE(stoke::Device<UnhashableDevice>);
}

TEST(DeviceConcept, DeviceNameIsWhatTheDevicePrints) {
  EXPECT_EQ(stoke::device_name(stoke::cpu::Device{3}), "cpu:3");
}

TEST(BackendConcept, AcceptsCpuBackend) {
  EXPECT_TRUE(stoke::Backend<stoke::cpu::Backend>);
}

TEST(BackendConcept, RejectsBackendWithoutNameOrDevices) {
  EXPECT_FALSE(stoke::Backend<BackendWithoutName>);
  EXPECT_FALSE(stoke::Backend<BackendWithoutDevices>);
}

TEST(BackendConcept, RejectsBackendWhoseDeviceListHoldsOtherTypes) {
  EXPECT_FALSE(stoke::Backend<BackendWithWrongDeviceList>);
}

TEST(DatasetConcept, AcceptsTypeWithSizeAndConstGet) {
  EXPECT_TRUE(stoke::Dataset<IotaDataset>);
  EXPECT_TRUE((std::same_as<stoke::dataset_item_t<IotaDataset>, std::size_t>));
}

TEST(DatasetConcept, RejectsNearMisses) {
  EXPECT_FALSE(stoke::Dataset<DatasetWithoutSize>);
  EXPECT_FALSE(stoke::Dataset<DatasetWithoutGet>);
  EXPECT_FALSE(stoke::Dataset<DatasetWithMutableGet>);
  EXPECT_FALSE(stoke::Dataset<DatasetWithVoidGet>);
}

TEST(BatcherConcept, AcceptsBatcherThatTakesTheDevice) {
  EXPECT_TRUE((stoke::Batcher<ItemsBatcher, stoke::cpu::Backend, std::size_t>));
  EXPECT_TRUE((stoke::Batcher<stoke::cpu::StackBatcher<float>, stoke::cpu::Backend, std::size_t>));
}

TEST(BatcherConcept, RejectsBatcherThatIgnoresTheDeviceOrIsNotConst) {
  EXPECT_FALSE((stoke::Batcher<BatcherWithoutDevice, stoke::cpu::Backend, std::size_t>));
  EXPECT_FALSE((stoke::Batcher<BatcherWithMutableBatch, stoke::cpu::Backend, std::size_t>));
}

TEST(DataLoaderConcept, AcceptsBothStokeLoaders) {
  EXPECT_TRUE(stoke::DataLoader<CpuLoader>);
  EXPECT_TRUE(stoke::DataLoader<CpuBatchLoader>);
  EXPECT_TRUE(stoke::SplitSource<CpuLoader>);
}

TEST(DataLoaderConcept, RejectsLoaderWithoutSlice) {
  EXPECT_FALSE(stoke::DataLoader<LoaderWithoutSlice>);
}

TEST(DataLoaderConcept, IterIsAnInputRangeOfBatches) {
  using Range = decltype(std::declval<CpuLoader&>().iter());
  EXPECT_TRUE(std::ranges::input_range<Range>);
  EXPECT_TRUE((std::same_as<std::ranges::range_value_t<Range>, CpuLoader::batch_type>));
}

}  // namespace

// The device-training kernels read their changing scalars from the device, over every
// `stoke::DeviceBackend` this executable was built for (Vulkan, CUDA): an optimizer step given a
// step table (and advancing its counter) equals, bit for bit, the step given the same scalars
// as arguments, Adam's bias corrections included; the softmax kernels reading a batch's real
// rows from the device (written there by `fill_words`) equal those given the count. What a
// captured step (a CUDA graph) needs.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <vector>

#include <stoke/learner.hpp>
#include <stoke/stoke.hpp>

#include "conformance_backends.hpp"
#include "conformance_traits.hpp"
#include "device_tensors.hpp"

namespace {

using stoke::testing::BackendNames;
using stoke::testing::ConformanceTraits;
using stoke::testing::float_pattern;
using stoke::testing::reduced_values;

using stoke::testing::kTestParameters;
using stoke::testing::kTestShard;
constexpr std::size_t kSteps = 4;
const float kRates[kSteps] = {0.05f, 0.02f, 0.07f, 0.01f};
const float kCounts[kSteps] = {4.0f, 0.0f, 7.0f, 3.0f};  // the second step has no items

template <class B>
class StepTable : public ::testing::Test {
 protected:
  using Traits = ConformanceTraits<B>;
  using Tensor = typename B::Tensor;

  void SetUp() override {
    Traits::set_up();
    if (const std::string why = Traits::skip_reason(); !why.empty()) GTEST_SKIP() << why;
    device_ = Traits::devices(1).at(0);
  }
  void TearDown() override { Traits::tear_down(); }

  Tensor tensor(const std::vector<float>& values) const {
    return stoke::testing::device_tensor<B>(device_, values);
  }

  /// `kSteps` steps of `optimizer` on the shard, its scalars given as arguments or (`tabled`)
  /// read from a step table; the parameters, the state arrays and the history, downloaded.
  template <class Optim>
  std::vector<std::vector<float>> steps(const Optim& optimizer, bool tabled) const {
    using OptimTraits = stoke::DeviceOptimizerTraits<Optim>;
    Tensor parameters = tensor(float_pattern(kTestParameters, 1));
    std::vector<Tensor> state;
    for (std::size_t a = 0; a < Optim::state_arrays; ++a) {
      state.push_back(B::zeros(device_, kTestShard.size()));
    }
    Tensor history = B::zeros(device_, kSteps * stoke::reduced_tail);
    std::vector<stoke::StepScalars> rows;
    for (std::size_t s = 0; s < kSteps; ++s) {
      rows.push_back(OptimTraits::scalars(optimizer, s + 1, kRates[s]));
    }
    const std::vector<float> table_values = stoke::step_table(rows);
    Tensor table = tensor(table_values);
    for (std::size_t s = 0; s < kSteps; ++s) {
      Tensor reduced = tensor(reduced_values(float_pattern(kTestParameters, 10 + s), kCounts[s]));
      const stoke::OptimizerStepShape shape{kTestParameters, kTestShard.begin, kTestShard.size(),
                                            kRates[s], s};
      OptimTraits::template step<B>(optimizer, s + 1, shape, parameters, std::span(state), reduced,
                                    history, tabled ? &table : nullptr);
      if (tabled) B::advance_step(table);
    }
    std::vector<std::vector<float>> out{B::download(parameters), B::download(history)};
    for (const Tensor& array : state) out.push_back(B::download(array));
    if (tabled) {
      const std::vector<float> after = B::download(table);
      std::uint32_t counter = 0;
      std::memcpy(&counter, after.data(), sizeof counter);
      EXPECT_EQ(counter, kSteps);  // every step advanced it
    }
    return out;
  }

  stoke::device_t<B> device_{};
};
TYPED_TEST_SUITE(StepTable, ConformanceBackends, BackendNames);

TYPED_TEST(StepTable, AnAdamStepReadingTheTableEqualsOneGivenItsScalars) {
  const stoke::Adam adam(0.9f, 0.99f, 1e-6f, 0.01f);
  const auto given = this->steps(adam, false);
  const auto tabled = this->steps(adam, true);
  EXPECT_EQ(tabled, given);
  EXPECT_NE(given[0], float_pattern(kTestParameters, 1));  // the steps changed the parameters
}

TYPED_TEST(StepTable, AnSgdStepReadingTheTableEqualsOneGivenItsScalars) {
  const stoke::Sgd sgd(0.05f, 0.9f, 0.01f);
  EXPECT_EQ(this->steps(sgd, true), this->steps(sgd, false));
}

TYPED_TEST(StepTable, SoftmaxKernelsReadingTheRealRowsOnTheDeviceEqualThoseGivenTheCount) {
  using B = TypeParam;
  using Kernels = stoke::SoftmaxKernels<typename B::Tensor>;
  constexpr std::size_t kRows = 8, kReal = 5, kFeatures = 7, kClasses = 5;
  const std::vector<std::int32_t> labels = {0, 4, 2, 2, 1, 3, 0, 1};
  auto inputs = this->tensor(float_pattern(kRows * kFeatures, 3));
  auto parameters = this->tensor(float_pattern(kFeatures * kClasses + kClasses, 4));
  auto device_labels = B::zeros(this->device_, kRows);
  B::upload(device_labels, std::as_bytes(std::span(labels)));
  auto real_rows = B::zeros(this->device_, 1);
  B::fill_words(real_rows, kReal);  // written on the device, nothing staged
  const stoke::SoftmaxShape shape{kRows, kReal, kFeatures, kClasses};
  std::vector<std::vector<float>> results[2];
  for (const bool on_device : {false, true}) {
    auto dlogits = B::zeros(this->device_, kRows * kClasses);
    auto item_stats = B::zeros(this->device_, kRows * 2);
    auto reduced = B::zeros(this->device_, kFeatures * kClasses + kClasses + 3);
    auto sums = B::zeros(this->device_, 3);
    if (on_device) {
      Kernels::forward(shape, inputs, device_labels, parameters, dlogits, item_stats, real_rows);
      Kernels::gradients(shape, inputs, dlogits, item_stats, reduced, real_rows);
      Kernels::add_sums(shape, item_stats, sums, real_rows);
    } else {
      Kernels::forward(shape, inputs, device_labels, parameters, dlogits, item_stats);
      Kernels::gradients(shape, inputs, dlogits, item_stats, reduced);
      Kernels::add_sums(shape, item_stats, sums);
    }
    results[on_device ? 1 : 0] = {B::download(dlogits), B::download(item_stats),
                                  B::download(reduced), B::download(sums)};
  }
  EXPECT_EQ(results[1], results[0]);
  EXPECT_EQ(results[0][3].at(1), static_cast<float>(kReal));  // the count of real rows
}

}  // namespace

// The device-training part of the conformance suite, over every `stoke::DeviceBackend` this
// executable was built for (Vulkan, CUDA): the optimizer kernels step a shard as the host
// optimizers do, element by element; the softmax kernels compute what the host `Mlp`
// computes; `SoftmaxClassifier` refuses a bad label naming the item; the collective
// all-gathers device buffers, uneven shards included.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>
#include <thread>
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

template <class B>
class DeviceTraining : public ::testing::Test {
 protected:
  using Traits = ConformanceTraits<B>;
  using Tensor = typename B::Tensor;
  using Classifier = stoke::SoftmaxClassifier<B, typename Traits::ImageBatch>;
  static_assert(stoke::DeviceBackend<B>);
  static_assert(stoke::DeviceTrainStep<Classifier, B, typename Classifier::BatchType>);

  void SetUp() override {
    Traits::set_up();
    if (const std::string why = Traits::skip_reason(); !why.empty()) GTEST_SKIP() << why;
    device_ = Traits::devices(1).at(0);
  }
  void TearDown() override { Traits::tear_down(); }

  static Tensor tensor(const stoke::device_t<B>& device, const auto& values) {
    return stoke::testing::device_tensor<B>(device, values);
  }

  /// Three steps (the second with no items) of `host` on the shard against the device kernel
  /// `device_step(shape, parameters, reduced, history)`; every float must be within
  /// `relative` of the host's (0: equal), and the history must hold every step's sums.
  template <class HostOptimizer, class DeviceStep>
  void expect_steps_match(HostOptimizer host, DeviceStep device_step, float relative) {
    std::vector<float> expected = float_pattern(kTestParameters, 1);
    Tensor parameters = tensor(device_, expected);
    Tensor history = B::zeros(device_, 3 * stoke::reduced_tail);
    const float counts[] = {4.0f, 0.0f, 7.0f};
    for (std::size_t step = 0; step < 3; ++step) {
      const std::vector<float> sums = float_pattern(kTestParameters, 10 + step);
      Tensor reduced = tensor(device_, reduced_values(sums, counts[step]));
      device_step(stoke::OptimizerStepShape{kTestParameters, kTestShard.begin, kTestShard.size(),
                                            0.05f, step},
                  parameters, reduced, history);
      if (counts[step] > 0) {
        std::vector<float> gradients(sums.begin() + static_cast<std::ptrdiff_t>(kTestShard.begin),
                                     sums.begin() + static_cast<std::ptrdiff_t>(kTestShard.end));
        for (float& g : gradients) g *= 1.0f / counts[step];
        host.step(std::span(expected).subspan(kTestShard.begin, kTestShard.size()), gradients,
                  0.05f);
      }
      const std::vector<float> actual = B::download(parameters);
      for (std::size_t i = 0; i < kTestParameters; ++i) {
        if (relative == 0.0f) {
          ASSERT_EQ(actual[i], expected[i]) << "parameter " << i << " after step " << step;
        } else {
          ASSERT_NEAR(actual[i], expected[i], relative * std::fabs(expected[i]))
              << "parameter " << i << " after step " << step;
        }
      }
    }
    const std::vector<float> recorded = B::download(history);
    for (std::size_t step = 0; step < 3; ++step) {
      EXPECT_EQ(recorded[3 * step], 2.5f) << "step " << step;
      EXPECT_EQ(recorded[3 * step + 1], counts[step]) << "step " << step;
      EXPECT_EQ(recorded[3 * step + 2], 1.0f) << "step " << step;
    }
  }

  /// A device batch of `labels.size()` rows of `features` inputs, the last `padding` of them
  /// padding, and the same batch in host memory for `Mlp`.
  auto batches(std::size_t features, const std::vector<std::int32_t>& labels,
               std::size_t padding) const {
    const std::size_t rows = labels.size();
    const std::vector<float> inputs = float_pattern(rows * features, 3);
    std::vector<std::size_t> indices(rows);
    for (std::size_t i = 0; i < rows; ++i) indices[i] = 100 + i;
    stoke::cpu::Tensor<float> host_inputs({rows, features});
    std::ranges::copy(inputs, host_inputs.values().begin());
    Tensor device_labels = B::zeros(device_, rows);
    B::upload(device_labels, std::as_bytes(std::span(labels)));
    return std::pair{
        typename Classifier::BatchType{
            {tensor(device_, inputs), labels, rows, features, {}, std::move(device_labels)},
            0,
            0,
            padding,
            indices},
        stoke::Batch<stoke::cpu::ClassificationBatch>{
            {std::move(host_inputs), labels}, 0, 0, padding, indices}};
  }

  stoke::device_t<B> device_{};
};
TYPED_TEST_SUITE(DeviceTraining, ConformanceBackends, BackendNames);

TYPED_TEST(DeviceTraining, SgdStepsAShardAsTheHostSgdDoes) {
  using B = TypeParam;
  typename B::Tensor velocity = B::zeros(this->device_, kTestShard.size());
  this->expect_steps_match(
      stoke::Sgd(0.05f, 0.9f, 0.01f),
      [&](const stoke::OptimizerStepShape& shape, auto& parameters, auto& reduced, auto& history) {
        B::sgd_step({0.9f, 0.01f}, shape, parameters, velocity, reduced, history);
      },
      0.0f);
}

TYPED_TEST(DeviceTraining, AdamStepsAShardAsTheHostAdamDoes) {
  using B = TypeParam;
  typename B::Tensor first = B::zeros(this->device_, kTestShard.size());
  typename B::Tensor second = B::zeros(this->device_, kTestShard.size());
  std::uint64_t steps = 0;
  this->expect_steps_match(
      stoke::Adam(0.9f, 0.99f, 1e-6f, 0.01f),
      [&](const stoke::OptimizerStepShape& shape, auto& parameters, auto& reduced, auto& history) {
        // The host counts only the steps with items; this test's zero-count step (the second)
        // changes nothing whatever its number.
        const std::uint64_t step = shape.history_slot == 1 ? steps : ++steps;
        B::adam_step({0.9f, 0.99f, 1e-6f, 0.01f, std::max<std::uint64_t>(step, 1)}, shape,
                     parameters, first, second, reduced, history);
      },
      ConformanceTraits<B>::adam_relative_error);
}

TYPED_TEST(DeviceTraining, SoftmaxClassifierStepEqualsTheHostMlpStep) {
  using B = TypeParam;
  constexpr std::size_t kFeatures = 7, kClasses = 5;
  stoke::Mlp reference({kFeatures, kClasses}, 11);
  typename TestFixture::Classifier model(this->device_, kFeatures, kClasses, std::uint64_t{11});
  ASSERT_EQ(B::download(model.parameters()),
            std::vector<float>(reference.parameters().begin(), reference.parameters().end()));

  const auto [device_batch, host_batch] = this->batches(kFeatures, {0, 4, 2, 2, 1, 3, 9, -1}, 2);
  std::vector<float> expected(reference.parameter_count());
  const stoke::StepOutput host = reference.train_step(host_batch, expected);
  typename B::Tensor reduced = B::zeros(this->device_, model.parameter_count() + 3);
  model.train_step(device_batch, reduced);
  const std::vector<float> actual = B::download(reduced);
  for (std::size_t i = 0; i < expected.size(); ++i) {
    EXPECT_NEAR(actual[i], expected[i], 1e-5f * (1.0f + std::fabs(expected[i])))
        << "gradient " << i;
  }
  EXPECT_NEAR(actual[expected.size()], host.loss_sum, 1e-5 * (1.0 + host.loss_sum));
  EXPECT_EQ(actual[expected.size() + 1], static_cast<float>(host.count));
  EXPECT_EQ(actual[expected.size() + 2], static_cast<float>(host.correct));

  typename B::Tensor sums = B::zeros(this->device_, stoke::reduced_tail);
  model.valid_step(device_batch, sums);
  model.valid_step(device_batch, sums);  // adds
  const stoke::StepOutput valid = reference.valid_step(host_batch);
  const std::vector<float> summed = B::download(sums);
  EXPECT_NEAR(summed[0], 2 * valid.loss_sum, 1e-5 * (1.0 + valid.loss_sum));
  EXPECT_EQ(summed[1], 2.0f * static_cast<float>(valid.count));
  EXPECT_EQ(summed[2], 2.0f * static_cast<float>(valid.correct));
}

TYPED_TEST(DeviceTraining, SoftmaxClassifierRefusesALabelOutOfRangeNamingTheItem) {
  using B = TypeParam;
  using Classifier = typename TestFixture::Classifier;
  Classifier model(this->device_, 3, 4, std::uint64_t{1});
  typename B::Tensor reduced = B::zeros(this->device_, model.parameter_count() + 3);
  try {
    model.train_step(this->batches(3, {1, 7, 2}, 0).first, reduced);
    FAIL() << "a label of 7 among 4 classes was accepted";
  } catch (const stoke::UsageError& error) {
    EXPECT_NE(std::string(error.what()).find("label 7 of item 1 (sample 101)"), std::string::npos)
        << error.what();
  }
  EXPECT_THROW(Classifier(this->device_, 3, 33, std::uint64_t{1}), stoke::UsageError);
}

TYPED_TEST(DeviceTraining, CollectiveAllGathersDeviceBuffersWithEvenAndUnevenShards) {
  using B = TypeParam;
  const auto devices = B::devices();
  const std::size_t parts = devices.size();
  auto collective = B::make_collective(devices);
  // Even shards, uneven ones (with two devices or more), and an empty shard or buffer.
  for (const std::size_t length : {4 * parts, 4 * parts + 1, parts - 1}) {
    std::vector<std::vector<float>> gathered(parts);
    std::vector<std::thread> threads;
    for (std::size_t d = 0; d < parts; ++d) {
      threads.emplace_back([&, d] {
        std::vector<float> mine(length, -1.0f);
        const stoke::ParameterShard own = stoke::parameter_shard(length, d, parts);
        for (std::size_t i = own.begin; i < own.end; ++i) mine[i] = static_cast<float>(10 * d + i);
        typename B::Tensor values = TestFixture::tensor(devices[d], mine);
        collective->all_gather(d, values);
        gathered[d] = B::download(values);
      });
    }
    for (auto& thread : threads) thread.join();
    std::vector<float> expected(length);
    for (std::size_t d = 0; d < parts; ++d) {
      const stoke::ParameterShard shard = stoke::parameter_shard(length, d, parts);
      for (std::size_t i = shard.begin; i < shard.end; ++i) {
        expected[i] = static_cast<float>(10 * d + i);
      }
    }
    for (std::size_t d = 0; d < parts; ++d) {
      EXPECT_EQ(gathered[d], expected) << "device " << d << ", " << length << " floats";
    }
  }
}

}  // namespace

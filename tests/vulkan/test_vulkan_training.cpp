// The Vulkan backend as a `stoke::DeviceBackend`: its optimizer shaders step exactly as the
// host optimizers do, element by element; its softmax shaders compute what the host `Mlp`
// computes; its collective all-gathers device buffers. Run with the validation layer on.
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
#include <stoke/vulkan.hpp>

#include "vulkan_validation.hpp"

namespace {

namespace vk = stoke::vulkan;
using VulkanTraining = stoke::testing::VulkanTest;
using Classifier = stoke::SoftmaxClassifier<vk::Backend, vk::ImageBatch>;

static_assert(stoke::DeviceBackend<vk::Backend>);
static_assert(stoke::DeviceTrainStep<Classifier, vk::Backend, Classifier::BatchType>);
static_assert(stoke::DeviceOptimizer<stoke::Sgd> && stoke::DeviceOptimizer<stoke::Adam>);

/// `count` floats of a fixed pseudo-random pattern in [-1, 1), different for every `seed`.
std::vector<float> pattern(std::size_t count, std::uint64_t seed) {
  stoke::SampleRng rng(seed, 0, 0);
  std::vector<float> out(count);
  for (float& x : out) x = static_cast<float>(rng() % 2000) / 1000.0f - 1.0f;
  return out;
}

/// A tensor on `device` holding `values`.
vk::Buffer tensor(const vk::Device& device, std::span<const float> values) {
  vk::Buffer out = vk::Backend::zeros(device, values.size());
  vk::Backend::upload(out, std::as_bytes(values));
  return out;
}

/// A reduced buffer: `gradient_sums`, then a loss sum of 2.5, `count` items, 1 correct.
std::vector<float> reduced_values(const std::vector<float>& gradient_sums, float count) {
  std::vector<float> out = gradient_sums;
  out.insert(out.end(), {2.5f, count, 1.0f});
  return out;
}

constexpr std::size_t kParameters = 37;
constexpr stoke::Shard kShard{5, 25};  // a device's shard [5, 25)

/// Three steps (the second with no items) of `host` on the shard against the device kernel
/// `device_step(shape, parameters, reduced, history)`; every float must be equal, or within
/// `relative` of the host's where the shader divides or takes a square root (Vulkan allows
/// 2.5 ULP for a division and more for a square root; IEEE gives the host 0.5).
template <class HostOptimizer, class DeviceStep>
void expect_steps_match(HostOptimizer host, DeviceStep device_step, const vk::Device& device,
                        float relative = 0.0f) {
  std::vector<float> expected = pattern(kParameters, 1);
  vk::Buffer parameters = tensor(device, expected);
  vk::Buffer history = vk::Backend::zeros(device, 3 * 3);
  const float counts[] = {4.0f, 0.0f, 7.0f};
  for (std::size_t step = 0; step < 3; ++step) {
    const std::vector<float> sums = pattern(kParameters, 10 + step);
    vk::Buffer reduced = tensor(device, reduced_values(sums, counts[step]));
    device_step(stoke::OptimizerStepShape{kParameters, kShard.begin, kShard.size(), 0.05f, step},
                parameters, reduced, history);
    if (counts[step] > 0) {
      std::vector<float> gradients(sums.begin() + static_cast<std::ptrdiff_t>(kShard.begin),
                                   sums.begin() + static_cast<std::ptrdiff_t>(kShard.end));
      for (float& g : gradients) g *= 1.0f / counts[step];
      host.step(std::span(expected).subspan(kShard.begin, kShard.size()), gradients, 0.05f);
    }
    const std::vector<float> actual = vk::Backend::download(parameters);
    for (std::size_t i = 0; i < kParameters; ++i) {
      if (relative == 0.0f) {
        ASSERT_EQ(actual[i], expected[i]) << "parameter " << i << " after step " << step;
      } else {
        ASSERT_NEAR(actual[i], expected[i], relative * std::fabs(expected[i]))
            << "parameter " << i << " after step " << step;
      }
    }
  }
  const std::vector<float> recorded = vk::Backend::download(history);
  for (std::size_t step = 0; step < 3; ++step) {
    EXPECT_EQ(recorded[3 * step], 2.5f) << "step " << step;
    EXPECT_EQ(recorded[3 * step + 1], counts[step]) << "step " << step;
    EXPECT_EQ(recorded[3 * step + 2], 1.0f) << "step " << step;
  }
}

TEST_F(VulkanTraining, SgdShaderStepsAShardAsTheHostSgdDoes) {
  const vk::Device device = vk::Backend::devices(1).at(0);
  vk::Buffer velocity = vk::Backend::zeros(device, kShard.size());
  expect_steps_match(
      stoke::Sgd(0.05f, 0.9f, 0.01f),
      [&](const stoke::OptimizerStepShape& shape, vk::Buffer& parameters, vk::Buffer& reduced,
          vk::Buffer& history) {
        vk::Backend::sgd_step({0.9f, 0.01f}, shape, parameters, velocity, reduced, history);
      },
      device);
}

TEST_F(VulkanTraining, AdamShaderStepsAShardAsTheHostAdamDoes) {
  const vk::Device device = vk::Backend::devices(1).at(0);
  vk::Buffer first = vk::Backend::zeros(device, kShard.size());
  vk::Buffer second = vk::Backend::zeros(device, kShard.size());
  std::uint64_t steps = 0;
  expect_steps_match(
      stoke::Adam(0.9f, 0.99f, 1e-6f, 0.01f),
      [&](const stoke::OptimizerStepShape& shape, vk::Buffer& parameters, vk::Buffer& reduced,
          vk::Buffer& history) {
        // The host counts only the steps with items; so does the learner's device replica
        // for every step it takes, and this test's zero-count step changes nothing.
        const std::uint64_t step = shape.history_slot == 1 ? steps : ++steps;
        vk::Backend::adam_step({0.9f, 0.99f, 1e-6f, 0.01f, std::max<std::uint64_t>(step, 1)}, shape,
                               parameters, first, second, reduced, history);
      },
      device, 1e-6f);
}

/// A batch of `rows` rows (the last `padding` of them padding) of `features` inputs on
/// `device`, with `labels`.
stoke::Batch<vk::ImageBatch> device_batch(const vk::Device& device, std::size_t features,
                                          std::vector<std::int32_t> labels, std::size_t padding) {
  const std::size_t rows = labels.size();
  std::vector<std::size_t> indices(rows);
  for (std::size_t i = 0; i < rows; ++i) indices[i] = 100 + i;
  return {vk::ImageBatch{tensor(device, pattern(rows * features, 3)), std::move(labels), rows,
                         features, vk::Fence{}},
          0, 0, padding, std::move(indices)};
}

/// The same batch in host memory, for `Mlp`.
stoke::Batch<stoke::cpu::ClassificationBatch> host_batch(
    const stoke::Batch<vk::ImageBatch>& batch) {
  const vk::ImageBatch& data = batch.data;
  stoke::cpu::Tensor<float> inputs({data.rows, data.row_size});
  const std::vector<float> values = pattern(data.rows * data.row_size, 3);
  std::ranges::copy(values, inputs.values().begin());
  return {{std::move(inputs), data.labels}, 0, 0, batch.padding, batch.indices};
}

TEST_F(VulkanTraining, SoftmaxClassifierStepEqualsTheHostMlpStep) {
  constexpr std::size_t kFeatures = 7, kClasses = 5;
  const vk::Device device = vk::Backend::devices(1).at(0);
  stoke::Mlp reference({kFeatures, kClasses}, 11);
  Classifier model(device, kFeatures, kClasses, std::uint64_t{11});
  ASSERT_EQ(vk::Backend::download(model.parameters()),
            std::vector<float>(reference.parameters().begin(), reference.parameters().end()));

  const auto batch = device_batch(device, kFeatures, {0, 4, 2, 2, 1, 3, 9, -1}, 2);
  std::vector<float> expected(reference.parameter_count());
  const stoke::StepOutput host = reference.train_step(host_batch(batch), expected);
  vk::Buffer reduced = vk::Backend::zeros(device, model.parameter_count() + stoke::reduced_tail);
  model.train_step(batch, reduced);
  const std::vector<float> actual = vk::Backend::download(reduced);
  for (std::size_t i = 0; i < expected.size(); ++i) {
    EXPECT_NEAR(actual[i], expected[i], 1e-5f * (1.0f + std::fabs(expected[i])))
        << "gradient " << i;
  }
  EXPECT_NEAR(actual[expected.size()], host.loss_sum, 1e-5 * (1.0 + host.loss_sum));
  EXPECT_EQ(actual[expected.size() + 1], static_cast<float>(host.count));
  EXPECT_EQ(actual[expected.size() + 2], static_cast<float>(host.correct));

  vk::Buffer sums = vk::Backend::zeros(device, stoke::reduced_tail);
  model.valid_step(batch, sums);
  model.valid_step(batch, sums);  // adds
  const stoke::StepOutput valid = reference.valid_step(host_batch(batch));
  const std::vector<float> summed = vk::Backend::download(sums);
  EXPECT_NEAR(summed[0], 2 * valid.loss_sum, 1e-5 * (1.0 + valid.loss_sum));
  EXPECT_EQ(summed[1], 2.0f * static_cast<float>(valid.count));
  EXPECT_EQ(summed[2], 2.0f * static_cast<float>(valid.correct));
}

TEST_F(VulkanTraining, SoftmaxClassifierRefusesALabelOutOfRangeNamingTheItem) {
  const vk::Device device = vk::Backend::devices(1).at(0);
  Classifier model(device, 3, 4, std::uint64_t{1});
  vk::Buffer reduced = vk::Backend::zeros(device, model.parameter_count() + stoke::reduced_tail);
  try {
    model.train_step(device_batch(device, 3, {1, 7, 2}, 0), reduced);
    FAIL() << "a label of 7 among 4 classes was accepted";
  } catch (const std::invalid_argument& error) {
    EXPECT_NE(std::string(error.what()).find("label 7 of item 1 (sample 101)"), std::string::npos)
        << error.what();
  }
  EXPECT_THROW(Classifier(device, 3, 33, std::uint64_t{1}), std::invalid_argument);
}

TEST_F(VulkanTraining, CollectiveAllGathersDeviceBuffersWithUnevenShards) {
  const auto devices = vk::Backend::devices(2);
  auto collective = vk::Backend::make_collective(devices);
  constexpr std::size_t kFloats = 7;  // uneven shards
  std::vector<std::vector<float>> gathered(2);
  std::vector<std::thread> threads;
  for (std::size_t d = 0; d < 2; ++d) {
    threads.emplace_back([&, d] {
      std::vector<float> mine(kFloats, -1.0f);
      const stoke::Shard own = stoke::shard_of(kFloats, d, 2);
      for (std::size_t i = own.begin; i < own.end; ++i) mine[i] = static_cast<float>(10 * d + i);
      vk::Buffer values = tensor(devices[d], mine);
      collective->all_gather(d, values);
      gathered[d] = vk::Backend::download(values);
    });
  }
  for (auto& thread : threads) thread.join();
  const std::vector<float> expected{0, 1, 2, 13, 14, 15, 16};  // shards [0, 3) and [3, 7)
  EXPECT_EQ(gathered[0], expected);
  EXPECT_EQ(gathered[1], expected);
}

}  // namespace

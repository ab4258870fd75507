// The learner with device-resident parameters on two Vulkan devices: the softmax classifier's
// parameters, gradients and optimizer state stay in device memory, the Vulkan collective sums
// the gradients, and training follows one CPU device (the host `Mlp` with the same layout) fed
// the global batch, step by step; a run stopped at a checkpoint resumes exactly.
#include <gtest/gtest.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <vector>

#include <stoke/learner.hpp>
#include <stoke/stoke.hpp>
#include <stoke/vulkan.hpp>

#include "stoke_test_files.hpp"
#include "toy_images.hpp"
#include "vulkan_host_batches.hpp"
#include "vulkan_toy_training.hpp"
#include "vulkan_validation.hpp"

namespace {

namespace vk = stoke::vulkan;
using stoke::testing::ToyImages;
using Classifier = stoke::SoftmaxClassifier<vk::Backend, vk::ImageBatch>;
using DeviceLearnerTest = stoke::testing::VulkanTest;
using CpuBuilder = stoke::DataLoaderBuilder<stoke::cpu::Backend, stoke::cpu::ImageBatcher>;
using stoke::testing::expect_resumed_exactly;
using stoke::testing::kToyModelSeed;
using stoke::testing::shader_train_loader;
using stoke::testing::shader_valid_loader;

/// The reference: the host `Mlp` of the same layout on one CPU device with the global batch.
template <class Optim>
std::pair<stoke::FitResult, std::vector<float>> cpu_reference(Optim optimizer,
                                                              const ToyImages& train,
                                                              const ToyImages& valid) {
  stoke::Learner<stoke::cpu::Backend, stoke::Mlp, Optim, stoke::ConstantLr> learner(
      stoke::Mlp({ToyImages::kPixels, ToyImages::kClasses}, kToyModelSeed), optimizer,
      stoke::ConstantLr{0.1f}, stoke::cpu::Backend::devices(1), {.epochs = 2, .log = nullptr});
  auto run = learner.fit(CpuBuilder({}).batch_size(16).shuffle(5).drop_last().build(train),
                         CpuBuilder({}).batch_size(32).pad().build(valid));
  const auto parameters = learner.model().parameters();
  return {std::move(run), std::vector<float>(parameters.begin(), parameters.end())};
}

/// A learner of the classifier on two Vulkan devices.
template <class Optim>
stoke::Learner<vk::Backend, Classifier, Optim, stoke::ConstantLr> device_learner(
    Optim optimizer, stoke::LearnerOptions options = {.epochs = 2, .log = nullptr}) {
  const auto devices = vk::Backend::devices(2);
  return {Classifier(devices[0], ToyImages::kPixels, ToyImages::kClasses, kToyModelSeed), optimizer,
          stoke::ConstantLr{0.1f}, devices, options};
}

/// Every step's loss and every final parameter of `run` equal the reference's within float
/// tolerance (the sums are taken in another order).
void expect_follows(const stoke::FitResult& run, const std::vector<float>& parameters,
                    const std::pair<stoke::FitResult, std::vector<float>>& reference) {
  const auto& [expected, expected_parameters] = reference;
  ASSERT_EQ(run.step_losses.size(), 60u);
  ASSERT_EQ(run.step_losses.size(), expected.step_losses.size());
  for (std::size_t s = 0; s < run.step_losses.size(); ++s) {
    ASSERT_NEAR(run.step_losses[s], expected.step_losses[s],
                1e-4f * (1.0f + std::fabs(expected.step_losses[s])))
        << "step " << s;
  }
  ASSERT_EQ(parameters.size(), expected_parameters.size());
  for (std::size_t i = 0; i < parameters.size(); ++i) {
    ASSERT_NEAR(parameters[i], expected_parameters[i], 1e-4f) << "parameter " << i;
  }
  EXPECT_EQ(run.epochs.back().valid_items, 100u);
  EXPECT_NEAR(run.epochs.back().valid_accuracy, expected.epochs.back().valid_accuracy, 0.011);
  EXPECT_NEAR(run.epochs.back().train_loss, expected.epochs.back().train_loss, 1e-4);
}

TEST_F(DeviceLearnerTest, TwoVulkanDevicesWithDeviceResidentSgdFollowOneCpuDevice) {
  const ToyImages train(480), valid(100, 9);
  auto learner = device_learner(stoke::Sgd(0.1f, 0.9f));
  const auto run = learner.fit(shader_train_loader(train), shader_valid_loader(valid));
  expect_follows(run, vk::Backend::download(learner.model().parameters()),
                 cpu_reference(stoke::Sgd(0.1f, 0.9f), train, valid));
  // The sharded velocity came back whole from the two devices.
  EXPECT_EQ(learner.optimizer().state().size(), learner.model().parameter_count());
}

TEST_F(DeviceLearnerTest, TwoVulkanDevicesWithDeviceResidentAdamFollowOneCpuDevice) {
  const ToyImages train(480), valid(100, 9);
  const stoke::Adam adam(0.9f, 0.99f, 1e-6f, 0.01f);
  auto learner = device_learner(adam);
  const auto run = learner.fit(shader_train_loader(train), shader_valid_loader(valid));
  expect_follows(run, vk::Backend::download(learner.model().parameters()),
                 cpu_reference(adam, train, valid));
  EXPECT_EQ(learner.optimizer().steps(), 60u);
}

TEST_F(DeviceLearnerTest, DeviceResidentTrainingThroughPrefetchFollowsOneCpuDevice) {
  const ToyImages train(480), valid(100, 9);
  using HostBuilder = stoke::DataLoaderBuilder<vk::Backend, stoke::testing::HostClassification>;
  auto prefetched = stoke::prefetch_to_device<vk::Backend>(
      HostBuilder({}).batch_size(8).shuffle(5).num_workers(2).drop_last().build(train), 3);
  auto learner = device_learner(stoke::Sgd(0.1f, 0.9f));
  const auto run = learner.fit(std::move(prefetched), shader_valid_loader(valid));
  expect_follows(run, vk::Backend::download(learner.model().parameters()),
                 cpu_reference(stoke::Sgd(0.1f, 0.9f), train, valid));
}

TEST_F(DeviceLearnerTest, ADeviceResidentRunStoppedAtACheckpointResumesExactly) {
  const ToyImages train(480), valid(100, 9);
  const stoke::Adam adam(0.9f, 0.99f, 1e-6f, 0.01f);
  auto unbroken = device_learner(adam);
  const auto full = unbroken.fit(shader_train_loader(train), shader_valid_loader(valid));

  const stoke::testing::TempDir dir;
  // Stop in epoch 1 right after a checkpoint, as a crash would, then resume.
  auto first = device_learner(adam, {.epochs = 2,
                                     .checkpoint_dir = dir.path(),
                                     .checkpoint_every_steps = 11,
                                     .log = nullptr,
                                     .stop_after_steps = 44});
  const auto before = first.fit(shader_train_loader(train), shader_valid_loader(valid));
  auto second = device_learner(
      adam, {.epochs = 2, .checkpoint_dir = dir.path(), .resume = true, .log = nullptr});
  const auto after = second.fit(shader_train_loader(train), shader_valid_loader(valid));
  expect_resumed_exactly(before, after, second, full, unbroken);
  EXPECT_EQ(after.epochs.back().train_loss, full.epochs.back().train_loss);
}

}  // namespace

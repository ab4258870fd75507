// The learner on the Vulkan backend's data path: batches are uploaded and normalised on two
// Vulkan devices by the compute shader, gradients are all-reduced by the Vulkan collective,
// and training follows one CPU device with the global batch.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <memory>
#include <span>
#include <vector>

#include <stoke/learner.hpp>
#include <stoke/stoke.hpp>
#include <stoke/vulkan.hpp>

#include "toy_images.hpp"
#include "vulkan_host_batches.hpp"
#include "vulkan_validation.hpp"

namespace {

namespace vk = stoke::vulkan;
using stoke::testing::ToyImages;

/// The MLP reading its batches from Vulkan device memory: it waits on the batch's fence,
/// downloads the normalised inputs and trains the CPU model on them.
class VulkanFedMlp {
 public:
  using BatchType = stoke::Batch<vk::ImageBatch>;

  explicit VulkanFedMlp(stoke::Mlp model) : model_(std::move(model)) {}
  VulkanFedMlp(const VulkanFedMlp& other) : model_(other.model_) {}  // stager made per replica
  VulkanFedMlp& operator=(const VulkanFedMlp& other) {
    model_ = other.model_;
    stager_.reset();
    return *this;
  }

  std::span<float> parameters() { return model_.parameters(); }
  std::span<const float> parameters() const { return model_.parameters(); }
  std::vector<stoke::ParameterTensor> parameter_layout() const { return model_.parameter_layout(); }

  stoke::StepOutput train_step(const BatchType& batch, std::span<float> gradients) {
    return model_.train_step(on_host(batch), gradients);
  }
  stoke::StepOutput valid_step(const BatchType& batch) const {
    return model_.valid_step(on_host(batch));
  }

 private:
  stoke::Batch<stoke::cpu::ClassificationBatch> on_host(const BatchType& batch) const {
    const vk::ImageBatch& images = batch.data;
    images.ready.wait();
    if (!stager_) stager_ = vk::Backend::make_stager(images.device(), 1);
    const auto bytes = stager_->download(images.inputs);
    stoke::cpu::Tensor<float> inputs({images.rows, images.row_size});
    std::memcpy(inputs.values().data(), bytes.data(), bytes.size());
    return {
        {std::move(inputs), images.labels}, batch.epoch, batch.step, batch.padding, batch.indices};
  }

  stoke::Mlp model_;
  mutable std::unique_ptr<vk::Stager> stager_;
};

using VulkanLearner = stoke::Learner<vk::Backend, VulkanFedMlp, stoke::Sgd, stoke::ConstantLr>;
using CpuLearner = stoke::Learner<stoke::cpu::Backend, stoke::Mlp, stoke::Sgd, stoke::ConstantLr>;
using VulkanLearnerEquivalence = stoke::testing::VulkanTest;

/// The reference run: one CPU device with the global batch (16), two epochs.
stoke::FitResult cpu_reference(const stoke::Mlp& model, const ToyImages& train,
                               const ToyImages& valid) {
  using CpuBuilder = stoke::DataLoaderBuilder<stoke::cpu::Backend, stoke::cpu::ImageBatcher>;
  CpuLearner on_cpu(model, stoke::Sgd(0.1f, 0.9f), stoke::ConstantLr{0.1f},
                    stoke::cpu::Backend::devices(1), {.epochs = 2, .log = nullptr});
  return on_cpu.fit(CpuBuilder({}).batch_size(16).shuffle(5).drop_last().build(train),
                    CpuBuilder({}).batch_size(32).pad().build(valid));
}

/// Two epochs on two Vulkan devices (batch 8 each) from `train`, validated on `valid`
/// normalised by the shader.
template <class TrainLoader>
stoke::FitResult vulkan_run_on_two_devices(const stoke::Mlp& model, TrainLoader train,
                                           const ToyImages& valid) {
  auto vulkan_valid = stoke::DataLoaderBuilder<vk::Backend, vk::ImageBatcher>(vk::ImageBatcher{})
                          .batch_size(32)
                          .pad()
                          .build(valid);
  VulkanLearner on_vulkan(VulkanFedMlp(model), stoke::Sgd(0.1f, 0.9f), stoke::ConstantLr{0.1f},
                          vk::Backend::devices(2), {.epochs = 2, .log = nullptr});
  return on_vulkan.fit(std::move(train), vulkan_valid);
}

/// Every step's loss of `run` equals the reference's within float tolerance.
void expect_same_steps(const stoke::FitResult& run, const stoke::FitResult& reference) {
  ASSERT_EQ(run.step_losses.size(), reference.step_losses.size());
  ASSERT_EQ(run.step_losses.size(), 60u);
  for (std::size_t s = 0; s < reference.step_losses.size(); ++s) {
    ASSERT_NEAR(run.step_losses[s], reference.step_losses[s],
                1e-4f * (1.0f + std::fabs(reference.step_losses[s])))
        << "step " << s;
  }
}

TEST_F(VulkanLearnerEquivalence, TwoVulkanDevicesFollowOneCpuDeviceWithTheGlobalBatch) {
  const ToyImages train(480), valid(100, 9);
  const stoke::Mlp model({ToyImages::kPixels, 12, ToyImages::kClasses}, 3);

  auto vulkan_loader = stoke::DataLoaderBuilder<vk::Backend, vk::ImageBatcher>(vk::ImageBatcher{})
                           .batch_size(8)
                           .shuffle(5)
                           .drop_last()
                           .build(train);
  const auto vulkan_run = vulkan_run_on_two_devices(model, vulkan_loader, valid);

  const auto cpu_run = cpu_reference(model, train, valid);
  expect_same_steps(vulkan_run, cpu_run);
  EXPECT_EQ(vulkan_run.epochs.back().valid_items, 100u);
  EXPECT_NEAR(vulkan_run.epochs.back().valid_accuracy, cpu_run.epochs.back().valid_accuracy, 0.011);
}

// `fit` takes a prefetching loader (a TrainingLoader): the host batches are made by loader
// workers, uploaded ahead of the step, and training follows one CPU device as closely as
// with the batches made on the device.
TEST_F(VulkanLearnerEquivalence, TwoVulkanDevicesFedThroughPrefetchFollowOneCpuDevice) {
  const ToyImages train(480), valid(100, 9);
  const stoke::Mlp model({ToyImages::kPixels, 12, ToyImages::kClasses}, 3);
  using HostBuilder = stoke::DataLoaderBuilder<vk::Backend, stoke::testing::HostClassification>;
  auto prefetched = stoke::prefetch_to_device<vk::Backend>(
      HostBuilder({}).batch_size(8).shuffle(5).num_workers(2).drop_last().build(train), 3);
  static_assert(stoke::TrainingLoader<decltype(prefetched)>);
  const auto vulkan_run = vulkan_run_on_two_devices(model, prefetched, valid);

  const auto cpu_run = cpu_reference(model, train, valid);
  expect_same_steps(vulkan_run, cpu_run);
}

}  // namespace

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

TEST_F(VulkanLearnerEquivalence, TwoVulkanDevicesFollowOneCpuDeviceWithTheGlobalBatch) {
  const ToyImages train(480), valid(100, 9);
  const stoke::Mlp model({ToyImages::kPixels, 12, ToyImages::kClasses}, 3);

  auto vulkan_loader = stoke::DataLoaderBuilder<vk::Backend, vk::ImageBatcher>(vk::ImageBatcher{})
                           .batch_size(8)
                           .shuffle(5)
                           .drop_last()
                           .build(train);
  auto vulkan_valid = stoke::DataLoaderBuilder<vk::Backend, vk::ImageBatcher>(vk::ImageBatcher{})
                          .batch_size(32)
                          .pad()
                          .build(valid);
  VulkanLearner on_vulkan(VulkanFedMlp(model), stoke::Sgd(0.1f, 0.9f), stoke::ConstantLr{0.1f},
                          vk::Backend::devices(2), {.epochs = 2, .log = nullptr});
  const auto vulkan_run = on_vulkan.fit(vulkan_loader, vulkan_valid);

  using CpuBuilder =
      stoke::DataLoaderBuilder<stoke::cpu::Backend, stoke::cpu::ClassificationBatcher>;
  CpuLearner on_cpu(model, stoke::Sgd(0.1f, 0.9f), stoke::ConstantLr{0.1f},
                    stoke::cpu::Backend::devices(1), {.epochs = 2, .log = nullptr});
  const auto cpu_run = on_cpu.fit(CpuBuilder({}).batch_size(16).shuffle(5).drop_last().build(train),
                                  CpuBuilder({}).batch_size(32).pad().build(valid));

  ASSERT_EQ(vulkan_run.step_losses.size(), cpu_run.step_losses.size());
  ASSERT_EQ(vulkan_run.step_losses.size(), 60u);
  for (std::size_t s = 0; s < cpu_run.step_losses.size(); ++s) {
    ASSERT_NEAR(vulkan_run.step_losses[s], cpu_run.step_losses[s],
                1e-4f * (1.0f + std::fabs(cpu_run.step_losses[s])))
        << "step " << s;
  }
  EXPECT_EQ(vulkan_run.epochs.back().valid_items, 100u);
  EXPECT_NEAR(vulkan_run.epochs.back().valid_accuracy, cpu_run.epochs.back().valid_accuracy, 0.011);
}

}  // namespace

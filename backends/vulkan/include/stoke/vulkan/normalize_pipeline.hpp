#pragma once
/// @file
/// `vulkan::NormalizePipeline`: the compute pipeline of `shaders/normalize_u8.comp` on one
/// device, which turns bytes into normalised floats `(b / 255 - mean) / std`.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include <vulkan/vulkan_core.h>

#include <stoke/core/error.hpp>
#include <stoke/vulkan/buffer.hpp>
#include <stoke/vulkan/context.hpp>
#include <stoke/vulkan/error.hpp>
#include <stoke/vulkan/fence.hpp>
#include <stoke/vulkan/shaders/normalize_u8.spv.hpp>

namespace stoke::vulkan {

/// The normalisation shader, ready to dispatch on one device. Descriptor sets are recycled
/// once the dispatch that used them has completed. Thread-safe.
class NormalizePipeline {
 public:
  /// Invocations per workgroup (`local_size_x` of the shader).
  static constexpr std::uint32_t group_size = 256;

  /// Builds the pipeline on `context`'s device.
  explicit NormalizePipeline(std::shared_ptr<Context> context) : context_(std::move(context)) {
    try {
      create();
    } catch (...) {
      destroy();
      throw;
    }
  }
  NormalizePipeline(const NormalizePipeline&) = delete;
  NormalizePipeline& operator=(const NormalizePipeline&) = delete;
  /// Waits for its dispatches, then destroys the pipeline.
  ~NormalizePipeline() {
    try {
      context_->fence(last_).wait();
    } catch (...) {  // device lost: destroy anyway
    }
    destroy();
  }

  /// Submits the conversion of the first `count` bytes of `bytes` into the first `count`
  /// floats of `values`, after `after` and the buffers' earlier writes; returns its fence.
  Fence run(Buffer& bytes, Buffer& values, std::size_t count, float mean, float std,
            std::span<const Fence> after = {}) {
    const std::size_t limit =
        context_->logical_device()->physical().properties.limits.maxStorageBufferRange;
    if (count * sizeof(float) > limit) {
      throw Error("stoke: vulkan: a batch of " + std::to_string(count) +
                  " floats exceeds the device's storage buffer range of " + std::to_string(limit) +
                  " bytes");
    }
    const VkDescriptorSet set = claim_set();
    const VkDescriptorBufferInfo infos[] = {{bytes.handle(), 0, VK_WHOLE_SIZE},
                                            {values.handle(), 0, VK_WHOLE_SIZE}};
    const VkWriteDescriptorSet writes[] = {
        {VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET, nullptr, set, 0, 0, 1,
         VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, nullptr, &infos[0], nullptr},
        {VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET, nullptr, set, 1, 0, 1,
         VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, nullptr, &infos[1], nullptr}};
    vkUpdateDescriptorSets(context_->handle(), 2, writes, 0, nullptr);
    const Params params{static_cast<std::uint32_t>(count), mean, std};
    const std::uint32_t max_groups =
        context_->logical_device()->physical().properties.limits.maxComputeWorkGroupCount[0];
    const auto groups = static_cast<std::uint32_t>(
        std::min<std::size_t>((count + group_size - 1) / group_size, max_groups));
    std::vector<Fence> waits(after.begin(), after.end());
    waits.push_back(bytes.written());
    waits.push_back(values.used());
    Fence fence;
    try {
      fence = context_->submit(
          [&](VkCommandBuffer commands) {
            if (groups == 0) return;
            vkCmdBindPipeline(commands, VK_PIPELINE_BIND_POINT_COMPUTE, pipeline_);
            vkCmdBindDescriptorSets(commands, VK_PIPELINE_BIND_POINT_COMPUTE, layout_, 0, 1, &set,
                                    0, nullptr);
            vkCmdPushConstants(commands, layout_, VK_SHADER_STAGE_COMPUTE_BIT, 0, sizeof(Params),
                               &params);
            vkCmdDispatch(commands, groups, 1, 1);
          },
          waits);
    } catch (...) {
      release_set(set, 0);
      throw;
    }
    bytes.mark_used(fence);
    values.mark_written(fence);
    release_set(set, fence.value());
    return fence;
  }

 private:
  void create() {
    const VkDevice device = context_->handle();
    const VkShaderModuleCreateInfo module_info{VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO, nullptr,
                                               0, sizeof(shaders::normalize_u8),
                                               shaders::normalize_u8};
    STOKE_VK_CHECK(vkCreateShaderModule(device, &module_info, nullptr, &module_));
    const VkDescriptorSetLayoutBinding bindings[] = {
        {0, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 1, VK_SHADER_STAGE_COMPUTE_BIT, nullptr},
        {1, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 1, VK_SHADER_STAGE_COMPUTE_BIT, nullptr}};
    const VkDescriptorSetLayoutCreateInfo set_info{
        VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO, nullptr, 0, 2, bindings};
    STOKE_VK_CHECK(vkCreateDescriptorSetLayout(device, &set_info, nullptr, &set_layout_));
    const VkPushConstantRange push{VK_SHADER_STAGE_COMPUTE_BIT, 0, sizeof(Params)};
    const VkPipelineLayoutCreateInfo layout_info{
        VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO, nullptr, 0, 1, &set_layout_, 1, &push};
    STOKE_VK_CHECK(vkCreatePipelineLayout(device, &layout_info, nullptr, &layout_));
    const VkComputePipelineCreateInfo pipeline_info{
        VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO,
        nullptr,
        0,
        {VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO, nullptr, 0,
         VK_SHADER_STAGE_COMPUTE_BIT, module_, "main", nullptr},
        layout_,
        VK_NULL_HANDLE,
        -1};
    STOKE_VK_CHECK(
        vkCreateComputePipelines(device, VK_NULL_HANDLE, 1, &pipeline_info, nullptr, &pipeline_));
  }

  void destroy() noexcept {
    const VkDevice device = context_->handle();
    for (VkDescriptorPool pool : pools_) vkDestroyDescriptorPool(device, pool, nullptr);
    vkDestroyPipeline(device, pipeline_, nullptr);
    vkDestroyPipelineLayout(device, layout_, nullptr);
    vkDestroyDescriptorSetLayout(device, set_layout_, nullptr);
    vkDestroyShaderModule(device, module_, nullptr);
  }

  struct Params {
    std::uint32_t count;
    float mean;
    float stddev;
  };
  struct Set {
    VkDescriptorSet set;
    std::uint64_t busy_until;
    bool claimed;
  };
  static constexpr std::uint32_t sets_per_pool = 16;

  /// A descriptor set whose last dispatch has completed, or a new one.
  VkDescriptorSet claim_set() {
    std::lock_guard lock(mutex_);
    const std::uint64_t completed = context_->completed();
    for (Set& entry : sets_) {
      if (!entry.claimed && entry.busy_until <= completed) {
        entry.claimed = true;
        return entry.set;
      }
    }
    if (sets_.size() == pools_.size() * sets_per_pool) {
      const VkDescriptorPoolSize size{VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 2 * sets_per_pool};
      const VkDescriptorPoolCreateInfo info{
          VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO, nullptr, 0, sets_per_pool, 1, &size};
      VkDescriptorPool pool = VK_NULL_HANDLE;
      STOKE_VK_CHECK(vkCreateDescriptorPool(context_->handle(), &info, nullptr, &pool));
      pools_.push_back(pool);
    }
    const VkDescriptorSetAllocateInfo info{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO, nullptr,
                                           pools_.back(), 1, &set_layout_};
    VkDescriptorSet set = VK_NULL_HANDLE;
    STOKE_VK_CHECK(vkAllocateDescriptorSets(context_->handle(), &info, &set));
    sets_.push_back(Set{set, 0, true});
    return set;
  }

  void release_set(VkDescriptorSet set, std::uint64_t busy_until) {
    std::lock_guard lock(mutex_);
    for (Set& entry : sets_) {
      if (entry.set == set) {
        entry.claimed = false;
        entry.busy_until = busy_until;
      }
    }
    last_ = std::max(last_, busy_until);
  }

  std::shared_ptr<Context> context_;
  VkShaderModule module_ = VK_NULL_HANDLE;
  VkDescriptorSetLayout set_layout_ = VK_NULL_HANDLE;
  VkPipelineLayout layout_ = VK_NULL_HANDLE;
  VkPipeline pipeline_ = VK_NULL_HANDLE;
  std::mutex mutex_;
  std::vector<VkDescriptorPool> pools_;
  std::vector<Set> sets_;
  std::uint64_t last_ = 0;  ///< timeline value of the last dispatch
};

}  // namespace stoke::vulkan

#pragma once
/// @file
/// `vulkan::ComputePipeline`: one compute shader, ready to dispatch on one device over storage
/// buffers, ordered after the buffers' earlier work by their fences. Every stoke shader (the
/// normalisation, the optimizers, the softmax classifier) runs through it.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include <vulkan/vulkan_core.h>

#include <stoke/core/error.hpp>
#include <stoke/vulkan/buffer.hpp>
#include <stoke/vulkan/context.hpp>
#include <stoke/vulkan/error.hpp>
#include <stoke/vulkan/fence.hpp>

namespace stoke::vulkan {

/// A buffer bound at a binding of a dispatch, in binding order, and what the shader does with
/// it: a read waits for the buffer's last write, a write (which may read too) for its last use.
struct Binding {
  /// A buffer the shader only reads.
  static Binding read(const Buffer& buffer) noexcept { return {&buffer, nullptr}; }
  /// A buffer the shader writes (and may read).
  static Binding write(Buffer& buffer) noexcept { return {&buffer, &buffer}; }

  const Buffer* buffer = nullptr;  ///< the storage buffer
  Buffer* written = nullptr;       ///< the same buffer when the shader writes it, else null
};

/// A compute shader with `bindings` storage buffers (set 0, bindings 0..n-1) and a block of
/// push constants. Descriptor sets are recycled once the dispatch that used them completed.
/// Thread-safe.
class ComputePipeline {
 public:
  /// Builds the pipeline of `spirv` on `context`'s device: `bindings` storage buffers,
  /// `push_bytes` of push constants, `group_size` invocations per workgroup (the shader's
  /// `local_size_x`).
  ComputePipeline(std::shared_ptr<Context> context, std::span<const std::uint32_t> spirv,
                  std::uint32_t bindings, std::uint32_t push_bytes, std::uint32_t group_size)
      : context_(std::move(context)),
        bindings_(bindings),
        push_bytes_(push_bytes),
        group_size_(group_size) {
    try {
      create(spirv);
    } catch (...) {
      destroy();
      throw;
    }
  }
  ComputePipeline(const ComputePipeline&) = delete;
  ComputePipeline& operator=(const ComputePipeline&) = delete;
  /// Waits for its dispatches, then destroys the pipeline.
  ~ComputePipeline() {
    try {
      context_->fence(last_).wait();
    } catch (...) {  // device lost: destroy anyway
    }
    destroy();
  }

  /// The device's context.
  [[nodiscard]] const std::shared_ptr<Context>& context() const noexcept { return context_; }

  /// The largest buffer a shader may bind, in bytes.
  [[nodiscard]] std::size_t max_binding_bytes() const noexcept {
    return context_->logical_device()->physical().properties.limits.maxStorageBufferRange;
  }

  /// Submits one dispatch of at least `invocations` invocations (whole workgroups, capped at
  /// the device's limit: shaders loop with a grid stride) over `bindings`, with `push` as
  /// push constants, after the fences in `after` and each buffer's earlier work; marks the
  /// buffers read or written by it and returns its fence. Throws `stoke::Error` naming the
  /// limit when a buffer exceeds the device's storage buffer range.
  Fence dispatch(std::span<const Binding> bindings, std::span<const std::byte> push,
                 std::size_t invocations, std::span<const Fence> after = {}) {
    if (bindings.size() != bindings_ || push.size() != push_bytes_) {
      throw UsageError("stoke: vulkan: a dispatch of a shader with " + std::to_string(bindings_) +
                       " bindings and " + std::to_string(push_bytes_) + " push bytes got " +
                       std::to_string(bindings.size()) + " and " + std::to_string(push.size()));
    }
    for (const Binding& binding : bindings) {
      if (binding.buffer->size() > max_binding_bytes()) {
        throw Error("stoke: vulkan: a buffer of " + std::to_string(binding.buffer->size()) +
                    " bytes exceeds the device's storage buffer range of " +
                    std::to_string(max_binding_bytes()) + " bytes");
      }
    }
    const VkDescriptorSet set = claim_set();
    std::vector<VkDescriptorBufferInfo> infos;
    std::vector<VkWriteDescriptorSet> writes;
    infos.reserve(bindings.size());
    for (std::uint32_t k = 0; k < bindings_; ++k) {
      infos.push_back({bindings[k].buffer->handle(), 0, VK_WHOLE_SIZE});
    }
    for (std::uint32_t k = 0; k < bindings_; ++k) {
      writes.push_back({VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET, nullptr, set, k, 0, 1,
                        VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, nullptr, &infos[k], nullptr});
    }
    vkUpdateDescriptorSets(context_->handle(), bindings_, writes.data(), 0, nullptr);
    const std::uint32_t max_groups =
        context_->logical_device()->physical().properties.limits.maxComputeWorkGroupCount[0];
    const auto groups = static_cast<std::uint32_t>(
        std::min<std::size_t>((invocations + group_size_ - 1) / group_size_, max_groups));
    std::vector<Fence> waits(after.begin(), after.end());
    for (const Binding& binding : bindings) {
      waits.push_back(binding.written == nullptr ? binding.buffer->written()
                                                 : binding.buffer->used());
    }
    Fence fence;
    try {
      fence = context_->submit(
          [&](VkCommandBuffer commands) {
            if (groups == 0) return;
            vkCmdBindPipeline(commands, VK_PIPELINE_BIND_POINT_COMPUTE, pipeline_);
            vkCmdBindDescriptorSets(commands, VK_PIPELINE_BIND_POINT_COMPUTE, layout_, 0, 1, &set,
                                    0, nullptr);
            if (push_bytes_ > 0) {
              vkCmdPushConstants(commands, layout_, VK_SHADER_STAGE_COMPUTE_BIT, 0, push_bytes_,
                                 push.data());
            }
            vkCmdDispatch(commands, groups, 1, 1);
          },
          waits);
    } catch (...) {
      release_set(set, 0);
      throw;
    }
    for (const Binding& binding : bindings) {
      if (binding.written == nullptr) {
        binding.buffer->mark_used(fence);
      } else {
        binding.written->mark_written(fence);
      }
    }
    release_set(set, fence.value(), &push);
    return fence;
  }

  /// The push constants of the last dispatch (empty before the first): what a test compares
  /// from step to step, where a step must hand the device no changing scalar.
  [[nodiscard]] std::vector<std::byte> last_push() const {
    std::lock_guard lock(mutex_);
    return last_push_;
  }

  /// `dispatch` with the push constants of a trivially copyable `params`.
  template <class Params>
  Fence dispatch(std::span<const Binding> bindings, const Params& params, std::size_t invocations,
                 std::span<const Fence> after = {}) {
    static_assert(std::is_trivially_copyable_v<Params>);
    return dispatch(bindings, std::as_bytes(std::span(&params, 1)), invocations, after);
  }

 private:
  void create(std::span<const std::uint32_t> spirv) {
    const VkDevice device = context_->handle();
    const VkShaderModuleCreateInfo module_info{VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO, nullptr,
                                               0, spirv.size_bytes(), spirv.data()};
    STOKE_VK_CHECK(vkCreateShaderModule(device, &module_info, nullptr, &module_));
    std::vector<VkDescriptorSetLayoutBinding> bindings;
    for (std::uint32_t k = 0; k < bindings_; ++k) {
      bindings.push_back(
          {k, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 1, VK_SHADER_STAGE_COMPUTE_BIT, nullptr});
    }
    const VkDescriptorSetLayoutCreateInfo set_info{
        VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO, nullptr, 0, bindings_,
        bindings.data()};
    STOKE_VK_CHECK(vkCreateDescriptorSetLayout(device, &set_info, nullptr, &set_layout_));
    const VkPushConstantRange push{VK_SHADER_STAGE_COMPUTE_BIT, 0, push_bytes_};
    const VkPipelineLayoutCreateInfo layout_info{VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO,
                                                 nullptr,
                                                 0,
                                                 1,
                                                 &set_layout_,
                                                 push_bytes_ > 0 ? 1u : 0u,
                                                 &push};
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
      const VkDescriptorPoolSize size{VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, bindings_ * sets_per_pool};
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

  /// Hands `set` back, busy until the timeline reaches `busy_until`; a submitted dispatch
  /// passes its `push` constants, which become `last_push()` (under the same lock).
  void release_set(VkDescriptorSet set, std::uint64_t busy_until,
                   const std::span<const std::byte>* push = nullptr) {
    std::lock_guard lock(mutex_);
    if (push != nullptr) last_push_.assign(push->begin(), push->end());
    for (Set& entry : sets_) {
      if (entry.set == set) {
        entry.claimed = false;
        entry.busy_until = busy_until;
      }
    }
    last_ = std::max(last_, busy_until);
  }

  std::shared_ptr<Context> context_;
  std::uint32_t bindings_;
  std::uint32_t push_bytes_;
  std::uint32_t group_size_;
  VkShaderModule module_ = VK_NULL_HANDLE;
  VkDescriptorSetLayout set_layout_ = VK_NULL_HANDLE;
  VkPipelineLayout layout_ = VK_NULL_HANDLE;
  VkPipeline pipeline_ = VK_NULL_HANDLE;
  mutable std::mutex mutex_;
  std::vector<VkDescriptorPool> pools_;
  std::vector<Set> sets_;
  std::uint64_t last_ = 0;            ///< timeline value of the last dispatch
  std::vector<std::byte> last_push_;  ///< the push constants of the last dispatch
};

}  // namespace stoke::vulkan

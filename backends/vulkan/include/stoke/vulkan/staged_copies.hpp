#pragma once
/// @file
/// The two copies of a collective staged through host memory, submitted without waiting:
/// a device buffer into host-visible memory (for the host to read once its fence signals),
/// and host-visible memory back into the device buffer (after a fence the host signals once it
/// wrote that memory).

#include <cstddef>
#include <span>

#include <vulkan/vulkan_core.h>

#include <stoke/vulkan/buffer.hpp>
#include <stoke/vulkan/context.hpp>
#include <stoke/vulkan/fence.hpp>

namespace stoke::vulkan::detail {

/// Submits the copy of `bytes` bytes of `source` into the staging buffer `staging`, after
/// `source`'s last write, made visible to host reads; marks both used and returns its fence.
inline Fence submit_copy_to_host(Context& context, const Buffer& source, const Buffer& staging,
                                 std::size_t bytes) {
  const Fence written = source.written();
  const Fence fence = context.submit(
      [&](VkCommandBuffer commands) {
        if (bytes == 0) return;
        const VkBufferCopy region{0, 0, bytes};
        vkCmdCopyBuffer(commands, source.handle(), staging.handle(), 1, &region);
        const VkBufferMemoryBarrier barrier{VK_STRUCTURE_TYPE_BUFFER_MEMORY_BARRIER,
                                            nullptr,
                                            VK_ACCESS_TRANSFER_WRITE_BIT,
                                            VK_ACCESS_HOST_READ_BIT,
                                            VK_QUEUE_FAMILY_IGNORED,
                                            VK_QUEUE_FAMILY_IGNORED,
                                            staging.handle(),
                                            0,
                                            VK_WHOLE_SIZE};
        vkCmdPipelineBarrier(commands, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_PIPELINE_STAGE_HOST_BIT,
                             0, 0, nullptr, 1, &barrier, 0, nullptr);
      },
      std::span(&written, 1));
  source.mark_used(fence);
  staging.mark_used(fence);
  return fence;
}

/// Submits the copy of `bytes` bytes of the staging buffer `staging` into `target`, after
/// `gate` (a fence the host signals once it wrote `staging`) and `target`'s earlier work;
/// marks `staging` used and `target` written and returns its fence.
inline Fence submit_copy_from_host(Context& context, const Buffer& staging, Buffer& target,
                                   std::size_t bytes, const Fence& gate) {
  const Fence waits[] = {gate, target.used()};
  const Fence fence = context.submit(
      [&](VkCommandBuffer commands) {
        if (bytes == 0) return;
        // The host wrote `staging` before it signalled `gate`: make those writes visible.
        const VkBufferMemoryBarrier barrier{VK_STRUCTURE_TYPE_BUFFER_MEMORY_BARRIER,
                                            nullptr,
                                            VK_ACCESS_HOST_WRITE_BIT,
                                            VK_ACCESS_TRANSFER_READ_BIT,
                                            VK_QUEUE_FAMILY_IGNORED,
                                            VK_QUEUE_FAMILY_IGNORED,
                                            staging.handle(),
                                            0,
                                            VK_WHOLE_SIZE};
        vkCmdPipelineBarrier(commands, VK_PIPELINE_STAGE_HOST_BIT, VK_PIPELINE_STAGE_TRANSFER_BIT,
                             0, 0, nullptr, 1, &barrier, 0, nullptr);
        const VkBufferCopy region{0, 0, bytes};
        vkCmdCopyBuffer(commands, staging.handle(), target.handle(), 1, &region);
      },
      waits);
  staging.mark_used(fence);
  target.mark_written(fence);
  return fence;
}

}  // namespace stoke::vulkan::detail

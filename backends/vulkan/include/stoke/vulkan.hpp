#pragma once
/// @file
/// The Vulkan backend: devices, buffers, staged uploads fenced by timeline semaphores, the
/// image batcher and its compute shader, the host-staged collective. Link `stoke::vulkan`;
/// never reached from `<stoke/stoke.hpp>`.

#include <stoke/vulkan/backend.hpp>
#include <stoke/vulkan/buffer.hpp>
#include <stoke/vulkan/collective.hpp>
#include <stoke/vulkan/command_pool.hpp>
#include <stoke/vulkan/context.hpp>
#include <stoke/vulkan/device.hpp>
#include <stoke/vulkan/device_kernels.hpp>
#include <stoke/vulkan/error.hpp>
#include <stoke/vulkan/fence.hpp>
#include <stoke/vulkan/image_batcher.hpp>
#include <stoke/vulkan/instance.hpp>
#include <stoke/vulkan/logical_device.hpp>
#include <stoke/vulkan/memory.hpp>
#include <stoke/vulkan/normalize_pipeline.hpp>
#include <stoke/vulkan/registry.hpp>
#include <stoke/vulkan/retired_buffers.hpp>
#include <stoke/vulkan/semaphore.hpp>
#include <stoke/vulkan/softmax_classifier.hpp>
#include <stoke/vulkan/stager.hpp>

#pragma once
/// @file
/// The CPU backend: devices in host memory, host tensors with recycled storage, batchers (the Eigen
/// view of a tensor is `<stoke/cpu/eigen.hpp>`, kept apart so that loaders need no Eigen).

#include <stoke/core/shared_memory_collective.hpp>
#include <stoke/cpu/backend.hpp>
#include <stoke/cpu/buffer_pool.hpp>
#include <stoke/cpu/device.hpp>
#include <stoke/cpu/image_batcher.hpp>
#include <stoke/cpu/stack_batcher.hpp>
#include <stoke/cpu/tensor.hpp>

#pragma once
/// @file
/// The CPU backend: logical devices, host tensors on Eigen with recycled storage, batchers.

#include <stoke/cpu/backend.hpp>
#include <stoke/cpu/buffer_pool.hpp>
#include <stoke/cpu/image_batcher.hpp>
#include <stoke/cpu/collective.hpp>
#include <stoke/cpu/device.hpp>
#include <stoke/cpu/stack_batcher.hpp>
#include <stoke/cpu/tensor.hpp>

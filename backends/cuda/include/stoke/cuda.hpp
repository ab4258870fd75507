#pragma once
/// @file
/// The CUDA backend: devices, device buffers from `cudaMallocAsync` pools, staged uploads
/// fenced by events, batchers (with the u8 -> float kernel), training in device memory (the
/// optimizer and softmax kernels), and the all_reduce and all_gather collective (lanes of a GPU
/// on the device, NCCL across GPUs).
/// Link `stoke::cuda`; never reached from `<stoke/stoke.hpp>`.

#include <stoke/cuda/backend.hpp>
#include <stoke/cuda/batcher.hpp>
#include <stoke/cuda/buffer.hpp>
#include <stoke/cuda/device.hpp>
#include <stoke/cuda/error.hpp>
#include <stoke/cuda/fence.hpp>
#include <stoke/cuda/kernels.hpp>
#include <stoke/cuda/lane_collective.hpp>
#include <stoke/cuda/runtime.hpp>
#include <stoke/cuda/softmax_classifier.hpp>
#include <stoke/cuda/stager.hpp>
#include <stoke/cuda/training.hpp>
#if defined(STOKE_CUDA_HAS_NCCL)
#include <stoke/cuda/nccl.hpp>
#endif

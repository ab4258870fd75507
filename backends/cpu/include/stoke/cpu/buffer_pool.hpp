#pragma once
/// @file
/// `cpu::BufferPool` and `cpu::HostBuffer`: the CPU backend's names for the backend-neutral
/// `stoke::BufferPool` and `stoke::HostBuffer` (`<stoke/core/buffer_pool.hpp>`).

#include <stoke/core/buffer_pool.hpp>

namespace stoke::cpu {

/// An owned block of host memory, given back to its pool (`stoke::HostBuffer`).
using HostBuffer = stoke::HostBuffer;
/// A bounded pool of recycled host buffers (`stoke::BufferPool`).
using BufferPool = stoke::BufferPool;

}  // namespace stoke::cpu

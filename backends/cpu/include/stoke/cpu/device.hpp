#pragma once
/// @file
/// `cpu::Device`: a CPU device (`cpu:0`, `cpu:1`, ...), the backend-neutral
/// `stoke::HostDevice` (`<stoke/core/host_device.hpp>`).

#include <stoke/core/host_device.hpp>

namespace stoke::cpu {

/// A CPU device (`stoke::HostDevice`).
using Device = stoke::HostDevice;

}  // namespace stoke::cpu

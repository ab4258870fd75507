#pragma once
/// @file
/// `cpu::Tensor<T>`: the CPU backend's tensor, the backend-neutral `stoke::HostTensor<T>`
/// (`<stoke/data/host_tensor.hpp>`; `<stoke/cpu/eigen.hpp>` views it as an Eigen matrix
/// without a copy).

#include <stoke/cpu/buffer_pool.hpp>
#include <stoke/cpu/device.hpp>
#include <stoke/data/host_tensor.hpp>

namespace stoke::cpu {

/// A dense row-major tensor in host memory (`stoke::HostTensor`).
template <class T>
using Tensor = stoke::HostTensor<T>;

}  // namespace stoke::cpu

#pragma once
/// @file
/// The type-list hook of the conformance suite: which backends this executable checks.
/// Each device backend gets its own executable (see CMakeLists.txt), chosen by a compile
/// definition, so that its labels stay its own:
///   (none)                     CPU and the test-only delayed backend (labels conformance, loader)
///   STOKE_CONFORMANCE_VULKAN   the Vulkan backend (labels conformance, vulkan)
///   STOKE_CONFORMANCE_CUDA     the CUDA backend: add `conformance_cuda.hpp` specialising
///                              `ConformanceTraits<stoke::cuda::Backend>` (see
///                              conformance_vulkan.hpp) and the CMake block is already there.

#include <gtest/gtest.h>

#if defined(STOKE_CONFORMANCE_VULKAN)
#include "conformance_vulkan.hpp"
using ConformanceBackends = ::testing::Types<stoke::vulkan::Backend>;
#elif defined(STOKE_CONFORMANCE_CUDA)
#include "conformance_cuda.hpp"
using ConformanceBackends = ::testing::Types<stoke::cuda::Backend>;
#else
#include "conformance_host.hpp"
using ConformanceBackends = ::testing::Types<stoke::cpu::Backend, stoke::testing::delayed::Backend>;
#endif

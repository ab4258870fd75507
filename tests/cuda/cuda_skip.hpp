#pragma once
/// @file
/// Skips a CUDA test, saying why, where this machine has no usable CUDA device.

#include <gtest/gtest.h>

#include <cstddef>
#include <string>
#include <vector>

#include <stoke/cuda.hpp>

/// Skips the test unless at least `count` CUDA devices are visible.
#define STOKE_CUDA_REQUIRE_DEVICES(count)                                           \
  do {                                                                              \
    if (const std::string why = ::stoke::cuda::unavailable_reason(); !why.empty())  \
      GTEST_SKIP() << why;                                                          \
    if (::stoke::cuda::Backend::devices().size() < static_cast<std::size_t>(count)) \
      GTEST_SKIP() << "needs " << (count) << " CUDA devices, found "                \
                   << ::stoke::cuda::Backend::devices().size();                     \
  } while (false)

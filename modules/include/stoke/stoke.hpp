#pragma once
/// @file
/// Everything in stoke that needs no device SDK: the core, the data module and the CPU
/// backend. CUDA and Vulkan headers are never reached from here.

#include <stoke/core.hpp>
#include <stoke/cpu.hpp>
#include <stoke/data.hpp>
#include <stoke/sequences/batching.hpp>

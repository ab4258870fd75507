#pragma once
/// @file
/// The core: devices, backends, errors, counter-based random numbers.

#include <stoke/core/backend.hpp>
#include <stoke/core/buffer_pool.hpp>
#include <stoke/core/collective.hpp>
#include <stoke/core/device.hpp>
#include <stoke/core/error.hpp>
#include <stoke/core/host_device.hpp>
#include <stoke/core/rng.hpp>
#include <stoke/core/staging.hpp>

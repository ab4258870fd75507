#pragma once
/// @file
/// Every dataset transform and the pipe that chains them:
/// `dataset | stoke::map(f) | stoke::shuffled(seed) | stoke::partial(0, 1000)`.

#include <stoke/data/transforms/composed.hpp>
#include <stoke/data/transforms/map.hpp>
#include <stoke/data/transforms/partial.hpp>
#include <stoke/data/transforms/pipe.hpp>
#include <stoke/data/transforms/sampled.hpp>
#include <stoke/data/transforms/shuffled.hpp>
#include <stoke/data/transforms/windows.hpp>

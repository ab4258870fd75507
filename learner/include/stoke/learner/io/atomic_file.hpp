#pragma once
/// @file
/// `write_file_atomically` for the learner's checkpoints and safetensors files: it lives in the
/// core (`<stoke/core/atomic_file.hpp>`), which the token store's writer shares.

#include <stoke/core/atomic_file.hpp>

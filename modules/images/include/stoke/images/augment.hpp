#pragma once
/// @file
/// The augmentations of stoke::images in one include: the operations and their `|` composition
/// (`Augmentation`), the draws, colour jitter, normalisation and rendering.

#include <stoke/images/augment_draw.hpp>   // IWYU pragma: export
#include <stoke/images/augment_ops.hpp>    // IWYU pragma: export
#include <stoke/images/augmentation.hpp>   // IWYU pragma: export
#include <stoke/images/color_jitter.hpp>   // IWYU pragma: export
#include <stoke/images/normalization.hpp>  // IWYU pragma: export
#include <stoke/images/render.hpp>         // IWYU pragma: export

#pragma once
/// @file
/// Batches for classification on the CPU backend: images with a class label
/// (`cpu::ClassificationBatch`, the backend-neutral `stoke::ClassificationBatch`).

#include <stoke/cpu/tensor.hpp>
#include <stoke/data/classification_batch.hpp>
#include <stoke/data/labeled_image.hpp>

namespace stoke::cpu {

/// A batch of labelled images in host memory (`stoke::ClassificationBatch`).
using ClassificationBatch = stoke::ClassificationBatch;

}  // namespace stoke::cpu

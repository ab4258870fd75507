#pragma once
/// @file
/// Batches for classification on the CPU backend: images with a class label.

#include <cstdint>
#include <span>
#include <vector>

#include <stoke/cpu/tensor.hpp>
#include <stoke/data/labeled_image.hpp>

namespace stoke::cpu {

/// One labelled image (the backend-independent sample type).
using LabeledImage = stoke::LabeledImage;

/// A batch of labelled images: `inputs` has shape `{n, pixels}` as floats, `labels` has `n`.
struct ClassificationBatch {
  Tensor<float> inputs;              ///< one row per item
  std::vector<std::int32_t> labels;  ///< the class of every row
};

}  // namespace stoke::cpu

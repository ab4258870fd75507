#pragma once
/// @file
/// Samples and batches for classification on the CPU backend: images with a class label.

#include <cstdint>
#include <span>
#include <vector>

#include <stoke/cpu/tensor.hpp>

namespace stoke::cpu {

/// One labelled image: its pixels (row-major bytes, borrowed from the dataset) and its class.
struct LabeledImage {
  std::span<const std::uint8_t> pixels;  ///< one byte per pixel
  std::uint32_t label = 0;               ///< the class
};

/// A batch of labelled images: `inputs` has shape `{n, pixels}` as floats, `labels` has `n`.
struct ClassificationBatch {
  Tensor<float> inputs;              ///< one row per item
  std::vector<std::int32_t> labels;  ///< the class of every row
};

}  // namespace stoke::cpu

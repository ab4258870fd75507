#pragma once
/// @file
/// `ClassificationBatch`: a batch of labelled images in host memory, as host batchers make it
/// (`cpu::ImageBatcher`, `images::ImageBatcher`).

#include <cstdint>
#include <vector>

#include <stoke/data/host_tensor.hpp>

namespace stoke {

/// A batch of labelled images: `inputs` has shape `{n, pixels}` as floats, `labels` has `n`.
struct ClassificationBatch {
  HostTensor<float> inputs;          ///< one row per item
  std::vector<std::int32_t> labels;  ///< the class of every row
};

}  // namespace stoke

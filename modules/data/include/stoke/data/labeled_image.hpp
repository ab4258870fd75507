#pragma once
/// @file
/// `LabeledImage`: a sample for image classification, independent of any backend.

#include <cstdint>
#include <span>

namespace stoke {

/// One labelled image: its pixels (row-major bytes, borrowed from the dataset) and its class.
struct LabeledImage {
  std::span<const std::uint8_t> pixels;  ///< one byte per pixel
  std::uint32_t label = 0;               ///< the class
};

}  // namespace stoke

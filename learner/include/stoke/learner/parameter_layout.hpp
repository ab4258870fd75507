#pragma once
/// @file
/// Named slices of a model's flat parameter buffer, for checkpoints that other tools read.

#include <concepts>
#include <cstddef>
#include <string>
#include <vector>

namespace stoke {

/// One named tensor inside a flat parameter buffer.
struct ParameterTensor {
  std::string name;                ///< e.g. `layers.0.weight`
  std::vector<std::size_t> shape;  ///< row-major extents
  std::size_t offset = 0;          ///< first float in the flat buffer
};

/// A model with named parameters: one that can name the tensors of its flat parameter buffer
/// (optional; a model without it is checkpointed as one flat tensor `parameters`).
///
/// Requirements:
/// 1. `m.parameter_layout()`, on a `const` model, returns the `ParameterTensor`s;
/// 2. they tile the flat buffer: each tensor's floats (the product of its shape) start at its
///    offset and lie inside the buffer, and together they cover it.
template <class M>
concept NamedParameters = requires(const M& model) {
  { model.parameter_layout() } -> std::convertible_to<std::vector<ParameterTensor>>;
};

}  // namespace stoke

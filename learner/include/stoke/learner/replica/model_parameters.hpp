#pragma once
/// @file
/// How the learner reads a model's parameter count and writes its parameters, in host or
/// device memory.

#include <algorithm>
#include <cstddef>
#include <span>

namespace stoke::detail {

/// The number of parameters of `model`: its `parameter_count()`, or the size of its host
/// parameters.
template <class Model>
std::size_t parameter_count(const Model& model) {
  if constexpr (requires { model.parameter_count(); }) {
    return model.parameter_count();
  } else {
    return model.parameters().size();
  }
}

/// Overwrites the parameters of `model` (host or backend `B`'s device memory) with `values`,
/// which hold `parameter_count(model)` floats.
template <class B, class Model>
void set_parameters(Model& model, std::span<const float> values) {
  if constexpr (requires { std::ranges::copy(values, model.parameters().begin()); }) {
    std::ranges::copy(values, model.parameters().begin());
  } else {
    B::upload(model.parameters(), std::as_bytes(values));
  }
}

}  // namespace stoke::detail

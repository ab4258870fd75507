#pragma once
/// @file
/// `shard_state`: the slice of an element-wise optimizer's state that an optimizer stepping
/// one shard of the parameters holds.

#include <cstddef>
#include <span>
#include <string>
#include <vector>

#include <stoke/core/collective.hpp>
#include <stoke/core/error.hpp>
#include <stoke/learner/optim/optimizer.hpp>

namespace stoke {

/// The state an `O` stepping only `shard` of `parameters` parameters holds, cut from `state`,
/// the whole state of an `O` for all of them: the header, then the shard of every
/// per-parameter array. A state of an optimizer that has not stepped yet (the header alone)
/// is returned as it is. Throws `UsageError` if `state` has neither size.
template <ElementwiseOptimizer O>
[[nodiscard]] std::vector<float> shard_state(std::span<const float> state, std::size_t parameters,
                                             ParameterShard shard) {
  const std::size_t header = O::state_header;
  const std::size_t arrays = O::state_arrays;
  if (state.size() == header) return {state.begin(), state.end()};
  if (state.size() != header + arrays * parameters || shard.end > parameters) {
    throw UsageError("stoke: an optimizer state of " + std::to_string(state.size()) +
                     " floats is neither " + std::to_string(header) + " (not stepped) nor " +
                     std::to_string(header) + " + " + std::to_string(arrays) + " x " +
                     std::to_string(parameters) + " parameters");
  }
  std::vector<float> part(state.begin(), state.begin() + static_cast<std::ptrdiff_t>(header));
  part.reserve(header + arrays * shard.size());
  for (std::size_t a = 0; a < arrays; ++a) {
    const auto array = state.subspan(header + a * parameters, parameters);
    part.insert(part.end(), array.begin() + static_cast<std::ptrdiff_t>(shard.begin),
                array.begin() + static_cast<std::ptrdiff_t>(shard.end));
  }
  return part;
}

}  // namespace stoke

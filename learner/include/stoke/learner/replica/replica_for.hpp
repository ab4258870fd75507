#pragma once
/// @file
/// `detail::ReplicaFor`: which replica a learner's device trains (host or device memory), and
/// how the learner reads a model's parameter count and writes its parameters in either memory.

#include <algorithm>
#include <cstddef>
#include <span>

#include <stoke/learner/device_backend.hpp>
#include <stoke/learner/optim/device_optimizer.hpp>
#include <stoke/learner/replica/device_replica.hpp>
#include <stoke/learner/replica/host_replica.hpp>

namespace stoke::detail {

/// A `HostReplica`, or a `DeviceReplica` when `on_device`. Only the chosen one is
/// instantiated, so a host backend never names the device replica.
template <bool on_device, class B, class Model, class Optim>
struct ReplicaFor {
  using type = HostReplica<Model, Optim>;  ///< trains in host memory
};

/// The device-memory case.
template <class B, class Model, class Optim>
struct ReplicaFor<true, B, Model, Optim> {
  using type = DeviceReplica<B, Model, Optim>;  ///< trains in `B`'s device memory
};

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

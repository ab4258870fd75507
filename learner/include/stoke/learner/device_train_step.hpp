#pragma once
/// @file
/// The `DeviceTrainStep` concept: a model replica whose parameters, gradients and step run in
/// the device memory of a `DeviceBackend`.

#include <concepts>
#include <cstddef>

#include <stoke/core/backend.hpp>
#include <stoke/learner/device_backend.hpp>

namespace stoke {

/// A model replica that trains in the memory of one device of backend `B`.
///
/// Requirements:
/// 1. `m.fork(device)` is a replica with the same parameters on `device` (the learner makes
///    one per device, as Burn's `fork`);
/// 2. `m.parameters()` is the replica's parameters, one `B::Tensor` of
///    `m.parameter_count()` floats;
/// 3. `m.train_step(batch, reduced)` enqueues forward and backward on `batch` and writes
///    into `reduced` (`parameter_count() + reduced_tail` floats) the SUMS of the per-item
///    gradients over the real items, then the loss sum, the real-item count and the correct
///    count: the learner all-reduces that one tensor and steps from it without reading it;
/// 4. `m.valid_step(batch, sums)` enqueues the evaluation of `batch` and adds its loss sum,
///    real-item count and correct count to the three floats of `sums`.
template <class M, class B, class BatchT>
concept DeviceTrainStep = DeviceBackend<B> && std::movable<M> &&
                          requires(M& model, const M& const_model, const BatchT& batch,
                                   typename B::Tensor& tensor, const device_t<B>& device) {
                            { const_model.fork(device) } -> std::same_as<M>;
                            { model.parameters() } -> std::same_as<typename B::Tensor&>;
                            { const_model.parameter_count() } -> std::convertible_to<std::size_t>;
                            model.train_step(batch, tensor);
                            model.valid_step(batch, tensor);
                          };

}  // namespace stoke

#pragma once
/// @file
/// The `DeviceBackend` concept: a backend whose devices hold a model's parameters, gradients
/// and optimizer state, and run its collectives and its optimizer there: what every device
/// model needs. A model's own kernels are that model's concept (the softmax classifier's:
/// `SoftmaxBackend`, `model/softmax_classifier.hpp`), so a new model adds nothing here.

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include <stoke/core/backend.hpp>
#include <stoke/core/collective.hpp>
#include <stoke/learner/kernels/device_training.hpp>

namespace stoke {

/// A backend that trains in device memory. Every operation is enqueued on the device's
/// execution queue (a CUDA stream, a Vulkan queue) in call order and returns without waiting,
/// except `download`.
///
/// Requirements:
/// 1. `B::Tensor` is a movable, default-constructible buffer of `tensor.size()` bytes in one
///    device's memory; `B::zeros(device, floats)` makes one of `floats` zeroed floats;
/// 2. `B::upload(tensor, bytes)` overwrites the start of `tensor` with host `bytes` (which
///    may be freed once it returns), after the work enqueued on `tensor` before;
///    `B::fill_words(tensor, word)` sets each of its 32-bit words to `word` the same way, with
///    no staging (nothing waits for a staging buffer);
/// 3. `B::download(tensor)` waits for the writes enqueued on `tensor` and returns its floats;
/// 4. the collective sums (`all_reduce_sum`) and gathers parameter shards (`all_gather`, with
///    the parameter shards of `stoke::parameter_shard`) of tensors, each participant passing a
///    tensor on its own device;
/// 5. `B::sgd_step` and `B::adam_step` take one element-wise optimizer step as the
///    `OptimizerStepShape` says, with state tensors of the stepped parameter shard's size;
/// 6. given a step table as their last tensor (`step_table.hpp`), `B::sgd_step` and
///    `B::adam_step` read the scalars that change from step to step (the rate, Adam's decay and
///    bias corrections) and the history slot from the table's row of its counter, and
///    `B::advance_step(table)` adds one to the counter, so a step hands the device the same
///    arguments every step.
template <class B>
concept DeviceBackend =
    CollectiveBackend<B> && std::movable<typename B::Tensor> &&
    std::default_initializable<typename B::Tensor> &&
    requires(const device_t<B>& device, typename B::Tensor& tensor,
             std::span<const std::byte> bytes, typename B::Collective& collective,
             std::size_t participant, const SgdHyperparameters& sgd,
             const AdamHyperparameters& adam, const OptimizerStepShape& step) {
      { B::zeros(device, std::size_t{}) } -> std::same_as<typename B::Tensor>;
      { tensor.size() } -> std::convertible_to<std::size_t>;
      B::upload(tensor, bytes);
      B::fill_words(tensor, std::uint32_t{});
      { B::download(tensor) } -> std::same_as<std::vector<float>>;
      collective.all_reduce_sum(participant, tensor);
      collective.all_gather(participant, tensor);
      B::sgd_step(sgd, step, tensor, tensor, tensor, tensor);
      B::adam_step(adam, step, tensor, tensor, tensor, tensor, tensor);
      B::sgd_step(sgd, step, tensor, tensor, tensor, tensor, tensor);
      B::adam_step(adam, step, tensor, tensor, tensor, tensor, tensor, tensor);
      B::advance_step(tensor);
    };

}  // namespace stoke

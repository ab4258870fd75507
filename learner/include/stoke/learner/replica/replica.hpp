#pragma once
/// @file
/// The `Replica` concept: what the learner's device thread drives, one device's model replica,
/// its optimizer (or its parameter shard of it) and its buffers. `detail::HostReplica` (host
/// memory) and `detail::DeviceReplica` (device memory) model it.

#include <concepts>
#include <cstddef>
#include <ranges>
#include <span>
#include <vector>

#include <stoke/learner/train_step.hpp>

namespace stoke {

/// One device's replica in data-parallel training, trained on `TrainBatch`es and evaluated on
/// `ValidBatch`es.
///
/// Requirements:
/// 1. `R::model_type` and `R::optimizer_type` are the model and optimizer it trains;
///    `R::Collective` is the collective the replicas of one `fit` sum through; and
///    `R(model, optimizer, d, devices, collective)` is the replica of device `d` of `devices`,
///    made on the thread that then drives it;
/// 2. `R::sums_on_host` is true when a step's sums are on the host as soon as
///    `reduce_and_step` returns, false when they stay on the device until `epoch_steps()`;
/// 3. `r.begin_epoch(steps, rates)` starts an epoch of `steps` steps whose learning rates are
///    `rates` (one a step: the schedule's, which `reduce_and_step` is then given in order), and
///    `r.begin_epoch(steps)` one whose rates are known only as each step is taken;
/// 4. `r.train(batch)` computes (or enqueues) the gradient sums and the `StepOutput` of
///    `batch`; `r.reduce_and_step(learning_rate)` sums both over the devices and steps the
///    optimizer at `learning_rate` with the gradients divided by the summed count; every device
///    calls it once a step;
/// 5. `r.step(batch, learning_rate)` is `r.train(batch)` then `r.reduce_and_step(learning_rate)`
///    (a device replica may run it as one captured graph);
/// 6. `r.epoch_steps()` is the summed `StepOutput` of every step of the epoch so far, in order;
/// 7. `r.valid(batch)` adds the `StepOutput` of `batch` to the validation sums, and
///    `r.take_valid_sums()` returns them and starts them again;
/// 8. `r.parameters()` is the parameters as host floats; `r.model()` and `r.optimizer()` are
///    the replica's model and optimizer;
/// 9. `r.whole_optimizer_state()` (the whole state, in `optimizer_type::state()`'s layout,
///    gathered from the devices' parameter shards) and `r.finish()` (the whole state into device
///    0's optimizer, at the end of training) are collective: every device calls them at the same
///    point.
template <class R, class TrainBatch, class ValidBatch = TrainBatch>
concept Replica =
    requires {
      typename R::model_type;
      typename R::optimizer_type;
      typename R::Collective;
      { R::sums_on_host } -> std::convertible_to<bool>;
    } && requires(R& replica, const R& const_replica, const TrainBatch& train_batch,
                  const ValidBatch& valid_batch, std::size_t steps, float learning_rate,
                  std::span<const float> rates) {
      replica.begin_epoch(steps);
      replica.begin_epoch(steps, rates);
      replica.train(train_batch);
      replica.reduce_and_step(learning_rate);
      replica.step(train_batch, learning_rate);
      { const_replica.epoch_steps() } -> std::ranges::random_access_range;
      requires std::same_as<std::ranges::range_value_t<decltype(const_replica.epoch_steps())>,
                            StepOutput>;
      replica.valid(valid_batch);
      { replica.take_valid_sums() } -> std::same_as<StepOutput>;
      { const_replica.parameters() } -> std::convertible_to<std::span<const float>>;
      { replica.whole_optimizer_state() } -> std::same_as<std::vector<float>>;
      replica.finish();
      { replica.model() } -> std::same_as<typename R::model_type&>;
      { replica.optimizer() } -> std::same_as<typename R::optimizer_type&>;
    };

}  // namespace stoke

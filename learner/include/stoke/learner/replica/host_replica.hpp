#pragma once
/// @file
/// `detail::HostReplica`: one device's model replica, optimizer and buffers when the model
/// trains in host memory (`TrainStep`): the learner's path for the CPU backend and for models
/// that read device batches back to the host.

#include <algorithm>
#include <cstddef>
#include <span>
#include <utility>
#include <vector>

#include <stoke/core/collective.hpp>
#include <stoke/learner/kernels/device_training.hpp>
#include <stoke/learner/optim/optimizer.hpp>
#include <stoke/learner/optim/shard_state.hpp>
#include <stoke/learner/replica/step_tail.hpp>
#include <stoke/learner/train_step.hpp>

namespace stoke::detail {

/// The replica of device `d` of `devices`, summing through an `AnyCollective` (a `Replica`). With
/// an `ElementwiseOptimizer` on several devices it steps only its parameter shard (its
/// optimizer holds that parameter shard's state) and all-gathers the parameters after each step.
template <class Model, Optimizer Optim>
class HostReplica {
 public:
  using model_type = Model;      ///< what it trains
  using optimizer_type = Optim;  ///< what steps it
  /// The collective the replicas share.
  using Collective = AnyCollective;
  /// Every step's sums are on the host as soon as the step returns.
  static constexpr bool sums_on_host = true;

  /// A replica of `model` and of `optimizer` (whose whole state it cuts to its parameter shard) on
  /// `devices[d]`.
  template <class Device>
  HostReplica(const Model& model, const Optim& optimizer, std::size_t d,
              const std::vector<Device>& devices, Collective& collective)
      : model_(model),
        optimizer_(optimizer),
        d_(d),
        devices_(devices.size()),
        collective_(&collective),
        parameters_(model_.parameters().size()),
        reduced_(parameters_ + reduced_tail),
        own_(sharded() ? parameter_shard(parameters_, d, devices_)
                       : ParameterShard{0, parameters_}) {
    if constexpr (ElementwiseOptimizer<Optim>) {
      if (sharded())
        optimizer_.load_state(shard_state<Optim>(optimizer.state(), parameters_, own_));
    }
  }

  /// Starts an epoch of `steps` steps: forgets the last epoch's step sums.
  void begin_epoch(std::size_t steps) {
    steps_.clear();
    steps_.reserve(steps);
  }
  /// `begin_epoch(steps)`: a host step takes its rate when it steps.
  void begin_epoch(std::size_t steps, std::span<const float> /*rates*/) { begin_epoch(steps); }

  /// Computes the gradient sums of `batch` and its loss, count and correct sums.
  template <class BatchT>
    requires TrainStep<Model, BatchT>
  void train(const BatchT& batch) {
    const StepOutput local = model_.train_step(batch, std::span(reduced_).first(parameters_));
    write_tail(std::span(reduced_).subspan(parameters_), local);
  }

  /// Sums the devices' gradients and sums, and steps the optimizer (on this replica's parameter
  /// shard, then all-gathers) at `learning_rate` with the gradients divided by the item count.
  void reduce_and_step(float learning_rate) {
    collective_->all_reduce_sum(d_, reduced_);
    const StepOutput step = read_tail(std::span(reduced_).subspan(parameters_));
    if (step.count > 0) {
      const auto own_gradients = std::span(reduced_).subspan(own_.begin, own_.size());
      const float scale = 1.0f / static_cast<float>(step.count);
      for (float& g : own_gradients) g *= scale;
      const std::span<float> weights = model_.parameters();
      optimizer_.step(weights.subspan(own_.begin, own_.size()), own_gradients, learning_rate);
      if (sharded()) collective_->all_gather(d_, weights);
    }
    steps_.push_back(step);
  }

  /// `train(batch)` then `reduce_and_step(learning_rate)`.
  template <class BatchT>
    requires TrainStep<Model, BatchT>
  void step(const BatchT& batch, float learning_rate) {
    train(batch);
    reduce_and_step(learning_rate);
  }

  /// The summed outputs of every step of this epoch so far.
  [[nodiscard]] const std::vector<StepOutput>& epoch_steps() const noexcept { return steps_; }

  /// Evaluates `batch`, adding to the validation sums.
  template <class BatchT>
    requires ValidationStep<Model, BatchT>
  void valid(const BatchT& batch) {
    valid_ += model_.valid_step(batch);
  }
  /// The validation sums since the last call, which starts them again.
  StepOutput take_valid_sums() { return std::exchange(valid_, StepOutput{}); }

  /// The parameters.
  [[nodiscard]] std::span<const float> parameters() const { return model_.parameters(); }

  /// The whole optimizer state: this replica's own, or, when sharded, the header (the same
  /// on every device) and every per-parameter array all-gathered from the devices' parameter
  /// shards. Every device calls it at the same point.
  std::vector<float> whole_optimizer_state() {
    std::vector<float> state = optimizer_.state();
    if constexpr (ElementwiseOptimizer<Optim>) {
      constexpr std::size_t header = Optim::state_header;
      if (!sharded() || state.size() == header) return state;  // not sharded, or not stepped
      std::vector<float> whole(header + Optim::state_arrays * parameters_, 0.0f);
      std::copy_n(state.begin(), header, whole.begin());
      for (std::size_t a = 0; a < Optim::state_arrays; ++a) {
        const auto array = std::span(whole).subspan(header + a * parameters_, parameters_);
        std::copy_n(state.begin() + static_cast<std::ptrdiff_t>(header + a * own_.size()),
                    own_.size(), array.begin() + static_cast<std::ptrdiff_t>(own_.begin));
        collective_->all_gather(d_, array);
      }
      return whole;
    }
    return state;
  }

  /// The end of training: replica 0's optimizer gets the whole state. Every device calls it.
  void finish() {
    if (!sharded()) return;
    const std::vector<float> whole = whole_optimizer_state();
    if (d_ == 0) optimizer_.load_state(whole);
  }

  /// The model replica.
  [[nodiscard]] Model& model() noexcept { return model_; }
  /// The optimizer (after `finish`, on device 0, with the whole state).
  [[nodiscard]] Optim& optimizer() noexcept { return optimizer_; }

 private:
  [[nodiscard]] bool sharded() const noexcept {
    return ElementwiseOptimizer<Optim> && devices_ > 1;
  }

  Model model_;
  Optim optimizer_;
  std::size_t d_;
  std::size_t devices_;
  Collective* collective_;
  std::size_t parameters_;
  std::vector<float> reduced_;  // gradient sums, then the step's `StepTail`
  ParameterShard own_;          // the parameters this replica's optimizer steps
  std::vector<StepOutput> steps_;
  StepOutput valid_;
};

}  // namespace stoke::detail

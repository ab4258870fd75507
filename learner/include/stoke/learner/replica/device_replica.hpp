#pragma once
/// @file
/// `detail::DeviceReplica`: one device's model replica, optimizer state and buffers when the
/// model trains in device memory (`DeviceTrainStep`). Nothing crosses to the host per step:
/// the model writes its gradient and step sums into one tensor, the backend's collective sums
/// it, the optimizer kernel reads the item count from it and records the step's sums in an
/// epoch history that the learner reads once an epoch (or at a checkpoint). Given the epoch's
/// rates, it fills a step table once an epoch (`step_table.hpp`): a step then hands the device
/// the same arguments every step, and its tensors are made in the first epoch only.

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include <stoke/core/backend.hpp>
#include <stoke/core/collective.hpp>
#include <stoke/core/device_training.hpp>
#include <stoke/core/error.hpp>
#include <stoke/core/step_table.hpp>
#include <stoke/learner/device_backend.hpp>
#include <stoke/learner/device_train_step.hpp>
#include <stoke/learner/optim/device_optimizer.hpp>
#include <stoke/learner/replica/step_tail.hpp>
#include <stoke/learner/train_step.hpp>

namespace stoke::detail {

/// The replica of device `d`: the model forked onto it, the optimizer state of its parameter shard
/// as device tensors (ZeRO-1 on several devices: it steps its parameter shard, then all-gathers the
/// parameters), and the reduced, history and validation tensors (a `Replica`).
/// The item count stays on the device, so a step whose global batch is all padding still
/// counts for Adam's bias correction here, where the host `Adam` skips it (the kernels leave
/// the parameters and state unchanged on such a step).
template <DeviceBackend B, class Model, DeviceOptimizer Optim>
class DeviceReplica {
 public:
  using model_type = Model;      ///< what it trains
  using optimizer_type = Optim;  ///< what steps it
  /// The backend's own collective: it sums device tensors.
  using Collective = typename B::Collective;
  using Tensor = typename B::Tensor;            ///< floats on the device
  using Traits = DeviceOptimizerTraits<Optim>;  ///< how `Optim` steps on the device
  /// Step sums stay on the device until `epoch_steps` downloads them.
  static constexpr bool sums_on_host = false;

  /// A replica of `model` on `devices[d]`, with `optimizer`'s whole state cut to its parameter
  /// shard.
  DeviceReplica(const Model& model, const Optim& optimizer, std::size_t d,
                const std::vector<device_t<B>>& devices, Collective& collective)
      : model_(model.fork(devices[d])),
        optimizer_(optimizer),
        device_(devices[d]),
        d_(d),
        devices_(devices.size()),
        collective_(&collective),
        parameters_(model_.parameter_count()),
        own_(sharded() ? parameter_shard(parameters_, d, devices_)
                       : ParameterShard{0, parameters_}),
        steps_taken_(Traits::steps(optimizer)),
        reduced_(B::zeros(device_, parameters_ + reduced_tail)),
        history_(B::zeros(device_, reduced_tail)),
        valid_sums_(B::zeros(device_, reduced_tail)) {
    const std::vector<float> whole = optimizer.state();
    constexpr std::size_t header = Optim::state_header;
    has_state_ = whole.size() == header + Optim::state_arrays * parameters_;
    for (std::size_t a = 0; a < Optim::state_arrays; ++a) {
      state_.push_back(B::zeros(device_, own_.size()));
      if (has_state_) {
        const auto shard =
            std::span(whole).subspan(header + a * parameters_ + own_.begin, own_.size());
        B::upload(state_.back(), std::as_bytes(shard));
      }
    }
  }

  /// Starts an epoch of `steps` steps whose rates come one a step (`reduce_and_step` hands each
  /// to the kernel): a history of their sums.
  void begin_epoch(std::size_t steps) {
    start_history(steps);
    rates_.clear();
  }

  /// Starts an epoch of `steps` steps at `rates` (one a step, at least `steps`): a history of
  /// their sums, and the step table of their scalars, computed here as the kernels' arguments
  /// would be and uploaded once, its counter at zero. Its steps read their scalars there.
  void begin_epoch(std::size_t steps, std::span<const float> rates) {
    if (rates.size() < steps) {
      throw UsageError("stoke: a device replica's epoch of " + std::to_string(steps) +
                       " steps got " + std::to_string(rates.size()) + " learning rates");
    }
    start_history(steps);
    rates_.assign(rates.begin(), rates.begin() + static_cast<std::ptrdiff_t>(steps));
    std::vector<StepScalars> rows(steps);
    for (std::size_t s = 0; s < steps; ++s) {
      rows[s] = Traits::scalars(optimizer_, steps_taken_ + 1 + s, rates_[s]);
    }
    const std::vector<float> table = step_table(rows);
    grow(table_, table.size());
    B::upload(table_, std::as_bytes(std::span(table)));
  }

  /// Enqueues the model's step on `batch`, into the reduced tensor.
  template <class BatchT>
    requires DeviceTrainStep<Model, B, BatchT>
  void train(const BatchT& batch) {
    model_.train_step(batch, reduced_);
  }

  /// Sums the reduced tensor over the devices (with one device there is no collective) and
  /// enqueues the optimizer step of this replica's shard at `learning_rate` (then all-gathers
  /// the parameters when sharded). Nothing here waits on the host: the collective marks the
  /// reduced tensor written by its completion, a fence the optimizer's work is ordered after.
  /// In an epoch begun with its rates, the kernel reads its scalars from the step table and
  /// the step advances the table's counter; `learning_rate` must be the epoch's rate of this
  /// step (`UsageError` otherwise).
  void reduce_and_step(float learning_rate) {
    const bool tabled = !rates_.empty();
    if (tabled && (steps_in_epoch_ >= rates_.size() ||
                   std::bit_cast<std::uint32_t>(rates_[steps_in_epoch_]) !=
                       std::bit_cast<std::uint32_t>(learning_rate))) {
      throw UsageError("stoke: a device replica's step " + std::to_string(steps_in_epoch_) +
                       " is not in its epoch's table at rate " + std::to_string(learning_rate));
    }
    if (sharded()) collective_->all_reduce_sum(d_, reduced_);  // one device: nothing to sum
    ++steps_taken_;
    has_state_ = true;
    Traits::template step<B>(
        optimizer_, steps_taken_,
        OptimizerStepShape{parameters_, own_.begin, own_.size(), learning_rate, steps_in_epoch_},
        model_.parameters(), std::span(state_), reduced_, history_, tabled ? &table_ : nullptr);
    if (tabled) B::advance_step(table_);
    if (sharded()) collective_->all_gather(d_, model_.parameters());
    ++steps_in_epoch_;
  }

  /// The summed outputs of every step of this epoch so far (downloads the history).
  [[nodiscard]] std::vector<StepOutput> epoch_steps() const {
    const std::vector<float> history = B::download(history_);
    std::vector<StepOutput> out;
    out.reserve(steps_in_epoch_);
    for (std::size_t s = 0; s < steps_in_epoch_; ++s) {
      out.push_back(read_tail(std::span(history).subspan(reduced_tail * s)));
    }
    return out;
  }

  /// Enqueues the evaluation of `batch`, adding to the validation sums on the device.
  template <class BatchT>
    requires DeviceTrainStep<Model, B, BatchT>
  void valid(const BatchT& batch) {
    model_.valid_step(batch, valid_sums_);
  }
  /// The validation sums since the last call (downloaded), which starts them again.
  StepOutput take_valid_sums() {
    const std::vector<float> sums = B::download(valid_sums_);
    B::fill_words(valid_sums_, 0);  // the float 0
    return read_tail(sums);
  }

  /// The parameters, downloaded.
  [[nodiscard]] std::vector<float> parameters() const { return B::download(model_.parameters()); }

  /// The whole optimizer state in the host optimizer's layout (`Optim::state()`): the header
  /// and every per-parameter array, all-gathered from the devices' parameter shards when sharded.
  /// Every device calls it at the same point.
  std::vector<float> whole_optimizer_state() {
    std::vector<float> whole = Traits::header(steps_taken_);
    if (!has_state_) return whole;
    for (std::size_t a = 0; a < Optim::state_arrays; ++a) {
      const std::vector<float> shard = B::download(state_[a]);
      if (!sharded()) {
        whole.insert(whole.end(), shard.begin(), shard.begin() + own_.size());
        continue;
      }
      std::vector<float> array(parameters_, 0.0f);
      std::copy_n(shard.begin(), own_.size(),
                  array.begin() + static_cast<std::ptrdiff_t>(own_.begin));
      grow(gathered_, parameters_);
      B::upload(gathered_, std::as_bytes(std::span(array)));
      collective_->all_gather(d_, gathered_);
      const std::vector<float> all = B::download(gathered_);
      whole.insert(whole.end(), all.begin(), all.begin() + parameters_);
    }
    return whole;
  }

  /// The end of training: replica 0's host optimizer gets the whole state. Every device
  /// calls it.
  void finish() {
    const std::vector<float> whole = whole_optimizer_state();
    if (d_ == 0) optimizer_.load_state(whole);
  }

  /// The model replica.
  [[nodiscard]] Model& model() noexcept { return model_; }
  /// The host optimizer (after `finish`, on device 0, with the whole state).
  [[nodiscard]] Optim& optimizer() noexcept { return optimizer_; }

 private:
  [[nodiscard]] bool sharded() const noexcept { return devices_ > 1; }

  /// Makes the history hold `steps` steps (it never shrinks: no tensor is made once it holds an
  /// epoch) and starts counting the epoch's steps.
  void start_history(std::size_t steps) {
    grow(history_, reduced_tail * std::max<std::size_t>(steps, 1));
    steps_in_epoch_ = 0;
  }
  /// Makes `tensor` hold at least `floats` floats (it never shrinks).
  void grow(Tensor& tensor, std::size_t floats) {
    if (tensor.size() < floats * sizeof(float)) tensor = B::zeros(device_, floats);
  }

  Model model_;
  Optim optimizer_;
  device_t<B> device_;
  std::size_t d_;
  std::size_t devices_;
  Collective* collective_;
  std::size_t parameters_;
  ParameterShard own_;
  std::uint64_t steps_taken_;
  bool has_state_ = false;
  Tensor reduced_;             // gradient sums, then the step's `StepTail`
  Tensor history_;             // a `StepTail` for every step of the epoch
  Tensor valid_sums_;          // the `StepTail` of validation
  Tensor table_;               // the step table of the epoch, when begun with its rates
  Tensor gathered_;            // a whole state array, all-gathered (checkpoints)
  std::vector<float> rates_;   // the epoch's rates, when it was begun with them
  std::vector<Tensor> state_;  // the optimizer's arrays, own parameter shard only
  std::size_t steps_in_epoch_ = 0;
};

}  // namespace stoke::detail

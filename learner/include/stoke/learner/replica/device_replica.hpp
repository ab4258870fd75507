#pragma once
/// @file
/// `detail::DeviceReplica`: one device's model replica, optimizer state and buffers when the
/// model trains in device memory (`DeviceTrainStep`). Nothing crosses to the host per step:
/// the model writes its gradient and step sums into one tensor, the backend's collective sums
/// it, the optimizer kernel reads the item count from it and records the step's sums in an
/// epoch history that the learner reads once an epoch (or at a checkpoint). Given the epoch's
/// rates, it fills a step table once an epoch (`step_table.hpp`): a step then hands the device
/// the same arguments every step, and its tensors are made in the first epoch only. That is
/// what lets a backend that captures (`CapturingBackend`: CUDA graphs) run a whole step with
/// one launch: on one device, in an epoch begun with its rates, for a model that checks its
/// batches apart (`ChecksBatches`) and a batch type with a slot (`detail::BatchSlot`), `step`
/// runs the first step of a shape as it always does, captures the second (forward, gradients,
/// optimizer, the table's counter) and launches that graph for every later batch of the shape,
/// each copied into the slot first. The same kernels run with the same arguments read from the
/// same tensors, so captured and uncaptured steps give the same bits; anything else the model
/// runs (a step of another shape, validation) drops the graph, since it may change what the
/// graph assumed (the real-row count on the device, a tensor made anew).

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <type_traits>
#include <variant>
#include <vector>

#include <stoke/core/backend.hpp>
#include <stoke/core/collective.hpp>
#include <stoke/core/error.hpp>
#include <stoke/learner/device_backend.hpp>
#include <stoke/learner/device_train_step.hpp>
#include <stoke/learner/kernels/device_training.hpp>
#include <stoke/learner/kernels/step_table.hpp>
#include <stoke/learner/optim/device_optimizer.hpp>
#include <stoke/learner/replica/captured_step.hpp>
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
    forget_graph();
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
    const bool tabled = check_rate(learning_rate);
    enqueue_update(learning_rate, tabled);
    count_step();
  }

  /// `train(batch)` then `reduce_and_step(learning_rate)`: one step, run as a captured graph
  /// where it can be (see the file's comment), else as those two calls.
  template <class BatchT>
    requires DeviceTrainStep<Model, B, BatchT>
  void step(const BatchT& batch, float learning_rate) {
    if constexpr (capturable<BatchT>) {
      if (captured_step(batch, learning_rate)) return;
      train(batch);
      reduce_and_step(learning_rate);
      warm_shape_ = Slot::shape_of(batch);
    } else {
      train(batch);
      reduce_and_step(learning_rate);
    }
  }

  /// Steps this replica ran as its captured step (launched as one graph) since it was made.
  [[nodiscard]] std::size_t captured_steps() const noexcept { return captured_steps_; }

  /// Whether `step` may capture (on by default, where it can): off, every step runs uncaptured.
  void capture_steps(bool allowed) {
    capture_allowed_ = allowed;
    forget_graph();
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
    forget_graph();
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
  /// The slot of the model's batches, and whether a step on `BatchT` can be captured.
  using Slot = BatchSlot<B, typename model_batch<Model>::type>;
  template <class BatchT>
  static constexpr bool capturable =
      CapturingBackend<B> && Slot::available &&
      std::same_as<BatchT, typename model_batch<Model>::type> && ChecksBatches<Model, BatchT>;
  using Graph = typename optional_step_graph<B>::type;  // the graph, where `B` captures
  using SlotHolder = std::conditional_t<Slot::available, Slot, std::monostate>;
  using ShapeHolder = typename optional_slot_shape<Slot>::type;  // a batch shape, if any

  [[nodiscard]] bool sharded() const noexcept { return devices_ > 1; }

  /// Runs the step on `batch` as the captured graph (capturing it first where the last step
  /// ran uncaptured on a batch of this shape); false when it must run uncaptured.
  template <class BatchT>
  bool captured_step(const BatchT& batch, float learning_rate) {
    if (!capture_allowed_ || sharded() || rates_.empty()) return false;
    const auto shape = Slot::shape_of(batch);
    if (graph_ && (shape != graph_shape_ || !graph_->current())) forget_graph();
    if (!graph_ && warm_shape_ != shape) return false;  // runs once uncaptured first
    const bool tabled = check_rate(learning_rate);
    model_.check(batch);
    slot_.fill(device_, batch);
    if (!graph_) {
      try {
        // Everything by value or through `this`: a backend may keep the recording.
        graph_.emplace(B::capture_step(device_, [this, learning_rate, tabled] {
          model_.train_step(slot_.held, reduced_);
          enqueue_update(learning_rate, tabled);
        }));
      } catch (const UsageError&) {
        throw;
      } catch (const Error&) {  // the runtime cannot capture it: this replica runs uncaptured
        capture_allowed_ = false;
        return false;
      }
      graph_shape_ = shape;
    }
    graph_->launch();
    ++captured_steps_;
    count_step();
    return true;
  }

  /// Drops the captured graph: the next step of a shape runs uncaptured before one is captured.
  void forget_graph() noexcept {
    graph_.reset();
    warm_shape_.reset();
  }

  /// Whether the epoch has a step table; throws `UsageError` where `learning_rate` is not the
  /// table's rate of this step.
  bool check_rate(float learning_rate) const {
    const bool tabled = !rates_.empty();
    if (tabled && (steps_in_epoch_ >= rates_.size() ||
                   std::bit_cast<std::uint32_t>(rates_[steps_in_epoch_]) !=
                       std::bit_cast<std::uint32_t>(learning_rate))) {
      throw UsageError("stoke: a device replica's step " + std::to_string(steps_in_epoch_) +
                       " is not in its epoch's table at rate " + std::to_string(learning_rate));
    }
    return tabled;
  }

  /// Enqueues the sum over the devices, the optimizer step of the shard (from the step table
  /// when `tabled`, then advancing its counter) and the all-gather: the device work of
  /// `reduce_and_step`, which a captured step records.
  void enqueue_update(float learning_rate, bool tabled) {
    if (sharded()) collective_->all_reduce_sum(d_, reduced_);  // one device: nothing to sum
    Traits::template step<B>(
        optimizer_, steps_taken_ + 1,
        OptimizerStepShape{parameters_, own_.begin, own_.size(), learning_rate, steps_in_epoch_},
        model_.parameters(), std::span(state_), reduced_, history_, tabled ? &table_ : nullptr);
    if (tabled) B::advance_step(table_);
    if (sharded()) collective_->all_gather(d_, model_.parameters());
  }

  /// Counts a step taken.
  void count_step() noexcept {
    ++steps_taken_;
    has_state_ = true;
    ++steps_in_epoch_;
  }

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
  bool capture_allowed_ = true;     // whether `step` may capture
  Graph graph_;                     // the captured step, if any
  std::size_t captured_steps_ = 0;  // steps launched as the captured step
  SlotHolder slot_;                 // where the captured step reads its batch
  ShapeHolder graph_shape_;         // the shape of batch the graph was captured on
  ShapeHolder warm_shape_;          // the shape of the last uncaptured step's batch, if none since
};

}  // namespace stoke::detail

#pragma once
/// @file
/// `Learner`: data-parallel training over the devices of one backend. The training loader is
/// split into one loader per device; each device has its own thread and model replica; the
/// gradient sums are all-reduced through the backend's collective, and every replica takes
/// the same optimizer step, so replicas stay identical. With one device it is plain training.

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <exception>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include <stoke/core/collective.hpp>
#include <stoke/core/error.hpp>
#include <stoke/data/replaced_samples.hpp>
#include <stoke/data/split.hpp>
#include <stoke/data/training_loader.hpp>
#include <stoke/learner/checkpoint.hpp>
#include <stoke/learner/device_train_step.hpp>
#include <stoke/learner/metrics.hpp>
#include <stoke/learner/optim/device_optimizer.hpp>
#include <stoke/learner/optim/optimizer.hpp>
#include <stoke/learner/optim/schedule.hpp>
#include <stoke/learner/options.hpp>
#include <stoke/learner/replica/device_replica.hpp>
#include <stoke/learner/replica/host_replica.hpp>
#include <stoke/learner/replica/model_parameters.hpp>
#include <stoke/learner/train_step.hpp>

namespace stoke {

/// What `Learner::fit` did.
struct FitResult {
  std::vector<EpochMetrics> epochs;  ///< metrics of every epoch trained in this call
  std::vector<float> step_losses;    ///< mean training loss of every step in this call
  std::size_t global_step = 0;       ///< optimizer steps taken, counting resumed ones
  bool resumed = false;              ///< whether training started from a checkpoint
  bool stopped_early = false;        ///< whether `stop_after_steps` ended it
};

/// Trains replicas of `Model` on the devices of backend `B`.
///
/// - Split per device: `fit` splits the training and validation loaders with `split`, so
///   every device runs the same number of steps; padding is excluded from losses and metrics.
/// - Exact averaging: each replica returns gradient SUMS over its real items; the learner
///   all-reduces the sums and the item count and divides, so N devices with batch b take the
///   same steps as one device with batch N*b.
/// - Identical replicas: the same reduced gradient and the same optimizer on every device;
///   after every epoch a checksum of every replica is compared and a divergence throws.
/// - Sharded optimizer step: with an `ElementwiseOptimizer` on several devices, device `k`
///   steps only its shard `shard_of(parameters, k, devices)` (with the optimizer state of
///   that shard alone), and the shards are all-gathered, so each device does 1/N of the
///   optimizer's work; the steps are the same as the whole step on every device (ZeRO's
///   stage 1). Checkpoints and `optimizer()` hold the whole state, gathered from the shards.
/// - Host or device memory: a `TrainStep` model trains in host memory (`detail::HostReplica`);
///   a `DeviceTrainStep` model on a `DeviceBackend` keeps its parameters, gradients and
///   optimizer state in device memory (`detail::DeviceReplica`): the step, the all-reduce and
///   the optimizer are enqueued on the device and the step sums reach the host once an epoch.
/// - Failures stop everything: an exception on one device (a `DataError` from its loader, a
///   model error) aborts the collective, every thread ends, and `fit` rethrows that error.
template <CollectiveBackend B, class Model, Optimizer Optim, LrSchedule Schedule>
class Learner {
 public:
  /// A learner for `model`, updated by `optimizer` at `schedule`'s rate, on `devices`.
  Learner(Model model, Optim optimizer, Schedule schedule, std::vector<device_t<B>> devices,
          LearnerOptions options = {})
      : model_(std::move(model)),
        optimizer_(std::move(optimizer)),
        schedule_(std::move(schedule)),
        devices_(std::move(devices)),
        options_(std::move(options)) {
    if (devices_.empty()) throw UsageError("stoke: a Learner needs a device");
  }

  /// The trained model (replica 0).
  [[nodiscard]] const Model& model() const noexcept { return model_; }
  /// The optimizer with its whole state (after `fit`, as replica 0 would hold it unsharded;
  /// for a device-resident model, downloaded from the devices).
  [[nodiscard]] const Optim& optimizer() const noexcept { return optimizer_; }
  /// The devices trained on.
  [[nodiscard]] const std::vector<device_t<B>>& devices() const noexcept { return devices_; }
  /// The checkpoint file in `options.checkpoint_dir`.
  [[nodiscard]] std::filesystem::path checkpoint_path() const {
    return options_.checkpoint_dir / "checkpoint.safetensors";
  }

  /// Trains on `train` and evaluates on `valid` every epoch, until `options.epochs` epochs are
  /// done. Both loaders are split over the devices (they need `Remainder::drop` or `pad`).
  /// This overload trains a model in host memory (`TrainStep`).
  template <TrainingLoader Train, SplitSource Valid>
    requires TrainStep<Model, typename Train::batch_type> &&
             ValidationStep<Model, typename Valid::batch_type>
  FitResult fit(Train train, Valid valid) {
    return fit_replicas<detail::HostReplica<Model, Optim>>(std::move(train), std::move(valid));
  }

  /// `fit` for a model that trains in device memory (`DeviceTrainStep` on a `DeviceBackend`,
  /// with an optimizer that has device kernels): parameters, gradients and optimizer state
  /// never leave the devices.
  template <TrainingLoader Train, SplitSource Valid>
    requires DeviceTrainStep<Model, B, typename Train::batch_type> &&
             DeviceTrainStep<Model, B, typename Valid::batch_type> && DeviceOptimizer<Optim> &&
             (!TrainStep<Model, typename Train::batch_type>)
  FitResult fit(Train train, Valid valid) {
    return fit_replicas<detail::DeviceReplica<B, Model, Optim>>(std::move(train), std::move(valid));
  }

 private:
  /// `fit` with one `Replica` a device.
  template <class Replica, class Train, class Valid>
  FitResult fit_replicas(Train train, Valid valid) {
    FitResult result;
    FitState<Train, Valid, Replica> run;
    if (options_.resume && !options_.checkpoint_dir.empty() &&
        std::filesystem::exists(checkpoint_path())) {
      const Checkpoint checkpoint =
          load_checkpoint(checkpoint_path(), model_, detail::parameter_count(model_));
      detail::set_parameters<B>(model_, checkpoint.parameters);
      optimizer_.load_state(checkpoint.optimizer_state);
      try {
        train.restore(checkpoint.progress.loader);
      } catch (const InputError& error) {
        throw InputError("stoke: checkpoint '" + checkpoint_path().string() +
                         "' holds a loader state the training loader cannot take: " + error.what());
      }
      run.first_epoch = checkpoint.progress.epoch;
      run.first_step = checkpoint.progress.global_step;
      run.resumed_sums = checkpoint.progress.epoch_sums;
      result.resumed = true;
    }
    if (!options_.checkpoint_dir.empty()) {
      std::filesystem::create_directories(options_.checkpoint_dir);
    }
    MetricsCsv csv(options_.metrics_csv, result.resumed);
    run.csv = &csv;
    run.result = &result;
    run.collective = make_collective<Replica>();
    run.train = split(train, devices_);
    run.valid = split(valid, devices_);

    // Each device thread makes its replica (binding its device) and trains it.
    std::vector<std::optional<Replica>> replicas(devices_.size());
    std::vector<std::thread> threads;
    for (std::size_t d = 0; d < devices_.size(); ++d) {
      threads.emplace_back([&, d] {
        try {
          replicas[d].emplace(model_, optimizer_, d, devices_, *run.collective);
          train_on_device(run, *replicas[d], d);
        } catch (...) {
          {
            std::lock_guard lock(run.error_mutex);
            if (!run.error) run.error = std::current_exception();
          }
          run.collective->abort();
        }
      });
    }
    for (auto& thread : threads) thread.join();
    if (run.error) std::rethrow_exception(run.error);
    model_ = std::move(replicas.front()->model());
    optimizer_ = std::move(replicas.front()->optimizer());
    return result;
  }

  using Clock = std::chrono::steady_clock;

  /// What the device threads of one `fit` call share.
  template <class Train, class Valid, class Replica>
  struct FitState {
    std::size_t first_epoch = 0;
    std::size_t first_step = 0;
    StepOutput resumed_sums;
    std::unique_ptr<typename Replica::Collective> collective;
    std::vector<Train> train;
    std::vector<Valid> valid;
    MetricsCsv* csv = nullptr;
    FitResult* result = nullptr;  // written by device 0 only
    std::mutex error_mutex;
    std::exception_ptr error;
  };

  /// The collective the replicas sum through: `options.make_collective`'s or the backend's,
  /// behind `AnyCollective` for host replicas; the backend's own for device replicas, whose
  /// tensors only it can sum.
  template <class Replica>
  std::unique_ptr<typename Replica::Collective> make_collective() const {
    if constexpr (Replica::sums_on_host) {
      return options_.make_collective
                 ? std::make_unique<AnyCollective>(options_.make_collective(devices_.size()))
                 : std::make_unique<AnyCollective>(B::make_collective(devices_));
    } else {
      if (options_.make_collective) {
        throw UsageError(
            "stoke: Learner: a model trained in device memory sums through the backend's own "
            "collective; LearnerOptions::make_collective is for host-memory models");
      }
      return B::make_collective(devices_);
    }
  }

  /// Whether checkpoints are written.
  [[nodiscard]] bool checkpointing() const noexcept {
    return !options_.checkpoint_dir.empty() && options_.write_checkpoints;
  }

  static double seconds_since(Clock::time_point start) {
    return std::chrono::duration<double>(Clock::now() - start).count();
  }

  /// The mean loss of a step (0 for a step without real items).
  static float mean_loss(const StepOutput& step) {
    return step.count > 0 ? static_cast<float>(step.loss_sum / static_cast<double>(step.count))
                          : 0.0f;
  }

  /// The training loop of device `d`: every epoch, its batches, the all-reduce and the
  /// optimizer step; then validation, the epoch's metrics and a checkpoint (device 0).
  template <class R, class Replica>
  void train_on_device(R& run, Replica& replica, std::size_t d) {
    auto& collective = *run.collective;
    const std::size_t devices = devices_.size();
    std::size_t global_step = run.first_step;

    for (std::size_t epoch = run.first_epoch; epoch < options_.epochs; ++epoch) {
      StepOutput sums = epoch == run.first_epoch ? run.resumed_sums : StepOutput{};
      double wait = 0.0;
      float learning_rate = schedule_(global_step);
      const auto epoch_start = Clock::now();
      auto& loader = run.train[d];
      loader.set_epoch(epoch);  // the learner's epoch, whatever the loader did before
      const std::size_t steps = loader.layout(epoch).num_batches;
      replica.begin_epoch(steps);
      // Device 0 brings the step sums of this epoch to the host: every step on a host
      // replica, and at progress lines, checkpoints and the epoch's end on a device one.
      std::size_t settled = 0;
      const auto settle = [&] {
        const auto& outputs = replica.epoch_steps();
        for (; settled < outputs.size(); ++settled) {
          sums += outputs[settled];
          run.result->step_losses.push_back(mean_loss(outputs[settled]));
        }
      };
      const std::size_t progress_every =
          Replica::sums_on_host ? 1 : std::max<std::size_t>(1, steps / 20);
      auto range = loader.iter();
      auto waited = Clock::now();
      auto it = range.begin();
      wait += seconds_since(waited);
      std::size_t step_in_epoch = 0;
      for (; it != range.end(); ++step_in_epoch) {
        learning_rate = schedule_(global_step);
        replica.train(*it);
        replica.reduce_and_step(learning_rate);
        ++global_step;
        if (d == 0) {
          run.result->global_step = global_step;
          if (options_.live_progress && options_.log != nullptr &&
              ((step_in_epoch + 1) % progress_every == 0 || step_in_epoch + 1 == steps)) {
            settle();
            *options_.log << fmt::format("\repoch {}/{} step {}/{} loss {:.4f}   ", epoch + 1,
                                         options_.epochs, step_in_epoch + 1, steps,
                                         sums.loss_sum / static_cast<double>(
                                                             std::max<std::size_t>(1, sums.count)))
                          << std::flush;
          }
        }
        if (checkpointing() && options_.checkpoint_every_steps != 0 &&
            global_step % options_.checkpoint_every_steps == 0) {
          const std::vector<float> state = replica.whole_optimizer_state();
          if (d == 0) {
            settle();
            checkpoint(replica, state, TrainingProgress{epoch, global_step, loader.state(), sums});
          }
        }
        if (options_.stop_after_steps != 0 && global_step >= options_.stop_after_steps) {
          if (d == 0) {
            settle();
            run.result->stopped_early = true;
          }
          replica.finish();
          return;
        }
        waited = Clock::now();
        ++it;
        wait += seconds_since(waited);
      }
      if (d == 0) settle();
      const double train_seconds = seconds_since(epoch_start);

      // Validation, split over the devices too; padding is excluded by the model.
      for (auto& batch : run.valid[d].iter()) replica.valid(batch);
      const StepOutput valid_sums = replica.take_valid_sums();

      // One all-reduce gathers the validation sums, every device's wait time and a checksum
      // of every replica (slot d is device d's; the others add zeros).
      std::vector<float> epoch_values(3 + 2 * devices, 0.0f);
      epoch_values[0] = static_cast<float>(valid_sums.loss_sum);
      epoch_values[1] = static_cast<float>(valid_sums.count);
      epoch_values[2] = static_cast<float>(valid_sums.correct);
      epoch_values[3 + d] = static_cast<float>(wait);
      epoch_values[3 + devices + d] = checksum(replica.parameters());
      collective.all_reduce_sum(d, std::span<float>(epoch_values));
      for (std::size_t k = 1; k < devices; ++k) {
        if (epoch_values[3 + devices + k] != epoch_values[3 + devices]) {
          throw Error("stoke: Learner: the replica on device " + std::to_string(k) +
                      " diverged from device 0 in epoch " + std::to_string(epoch));
        }
      }
      const std::vector<float> state =
          checkpointing() ? replica.whole_optimizer_state() : std::vector<float>{};
      if (d != 0) continue;

      EpochMetrics metrics;
      metrics.epoch = epoch;
      const auto mean = [](double sum, std::size_t count) {
        return count == 0 ? 0.0 : sum / static_cast<double>(count);
      };
      metrics.train_loss = mean(sums.loss_sum, sums.count);
      metrics.train_accuracy = mean(static_cast<double>(sums.correct), sums.count);
      metrics.valid_items = static_cast<std::size_t>(epoch_values[1]);
      metrics.valid_loss = mean(epoch_values[0], metrics.valid_items);
      metrics.valid_accuracy = mean(epoch_values[2], metrics.valid_items);
      metrics.seconds = train_seconds;
      metrics.samples_per_second =
          train_seconds > 0
              ? static_cast<double>(sums.count -
                                    (epoch == run.first_epoch ? run.resumed_sums.count : 0)) /
                    train_seconds
              : 0.0;
      metrics.learning_rate = learning_rate;
      for (std::size_t k = 0; k < devices; ++k) metrics.wait_seconds.push_back(epoch_values[3 + k]);
      metrics.replaced_samples = stoke::replaced_samples(loader, epoch);
      run.result->epochs.push_back(metrics);
      run.csv->write(metrics);
      if (options_.log != nullptr) {
        if (options_.live_progress) *options_.log << '\r';
        *options_.log << describe(metrics, options_.epochs) << std::endl;
      }
      if (checkpointing()) {
        checkpoint(replica, state, TrainingProgress{epoch + 1, global_step, loader.state(), {}});
      }
    }
    replica.finish();
  }

  /// A checksum of a replica's parameters (sums with position weights, so swaps count).
  static float checksum(std::span<const float> parameters) {
    double sum = 0.0;
    for (std::size_t i = 0; i < parameters.size(); ++i) {
      sum += static_cast<double>(parameters[i]) * static_cast<double>(1 + i % 97);
    }
    return static_cast<float>(sum);
  }

  /// Writes the checkpoint of `replica` with the whole optimizer `state` (device 0 only).
  template <class Replica>
  void checkpoint(Replica& replica, std::span<const float> state,
                  const TrainingProgress& progress) const {
    const auto parameters = replica.parameters();
    save_checkpoint(checkpoint_path(), replica.model(), std::span<const float>(parameters), state,
                    progress);
  }

  Model model_;
  Optim optimizer_;
  Schedule schedule_;
  std::vector<device_t<B>> devices_;
  LearnerOptions options_;
};

}  // namespace stoke

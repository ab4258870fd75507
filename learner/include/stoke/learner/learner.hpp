#pragma once
/// @file
/// `Learner`: data-parallel training over the devices of one backend. The training loader is
/// split into one loader per device; each device has its own thread and model replica (a
/// `Replica`); the gradient sums are all-reduced through the backend's collective, and every
/// replica steps its parameter shard and all-gathers the others' (or, unsharded, takes
/// the whole step), so replicas stay identical. With one device it is plain training.

#include <cstddef>
#include <exception>
#include <filesystem>
#include <latch>
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
#include <stoke/learner/fit/checkpoint_policy.hpp>
#include <stoke/learner/fit/data_wait.hpp>
#include <stoke/learner/fit/epoch_exchange.hpp>
#include <stoke/learner/fit/epoch_report.hpp>
#include <stoke/learner/fit/progress_line.hpp>
#include <stoke/learner/fit/step_tally.hpp>
#include <stoke/learner/metrics.hpp>
#include <stoke/learner/optim/device_optimizer.hpp>
#include <stoke/learner/optim/optimizer.hpp>
#include <stoke/learner/optim/schedule.hpp>
#include <stoke/learner/options.hpp>
#include <stoke/learner/replica/device_replica.hpp>
#include <stoke/learner/replica/host_replica.hpp>
#include <stoke/learner/replica/model_parameters.hpp>
#include <stoke/learner/replica/replica.hpp>
#include <stoke/learner/train_step.hpp>

namespace stoke {

/// What `Learner::fit` did.
struct FitResult {
  std::vector<EpochMetrics> epochs;  ///< metrics of every epoch trained in this call
  std::vector<float> step_losses;    ///< mean training loss of every step in this call
  std::size_t global_step = 0;       ///< optimizer steps taken, counting resumed ones
  bool resumed = false;              ///< whether training started from a checkpoint
  bool stopped_early = false;        ///< whether `stop_after_steps` ended it
  /// Steps of this call that ran as a captured step (one launch), summed over devices: zero
  /// where the backend does not capture or `capture_steps` is off.
  std::size_t captured_steps = 0;
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
///   steps only its parameter shard `parameter_shard(parameters, k, devices)` (with the
///   optimizer state of that parameter shard alone), and the parameter shards are
///   all-gathered, so each device does 1/N of the optimizer's work; the steps are the same as
///   the whole step on every device (ZeRO's stage 1). Checkpoints and `optimizer()` hold the
///   whole state, gathered from the parameter shards.
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
  [[nodiscard]] std::filesystem::path checkpoint_path() const { return checkpoints_.file(); }

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
  /// `fit` with one replica of type `R` a device.
  template <class R, class Train, class Valid>
    requires Replica<R, typename Train::batch_type, typename Valid::batch_type>
  FitResult fit_replicas(Train train, Valid valid) {
    FitResult result;
    FitState<Train, Valid, R> run;
    if (checkpoints_.resumes()) {
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
      run.first_epoch_stepped = checkpoint.progress.loader.epoch > checkpoint.progress.epoch;
      run.first_step = checkpoint.progress.global_step;
      run.resumed_sums = checkpoint.progress.epoch_sums;
      result.resumed = true;
    }
    checkpoints_.make_directory();
    MetricsCsv csv(options_.metrics_csv, result.resumed);
    detail::EpochReport report(options_, csv, result.epochs);
    run.report = &report;
    run.result = &result;
    run.collective = make_collective<R>();
    run.train = split(train, devices_);
    run.valid = split(valid, devices_);

    // Each device thread makes its replica (binding its device) and trains it, once every
    // replica is made: making one reads the model where it lives (`fork`), and a device whose
    // step already began may hold that read behind its collective, which waits for the device
    // still making its replica.
    std::vector<std::optional<R>> replicas(devices_.size());
    std::vector<std::thread> threads;
    std::latch made(static_cast<std::ptrdiff_t>(devices_.size()));
    for (std::size_t d = 0; d < devices_.size(); ++d) {
      threads.emplace_back([&, d] {
        try {
          try {
            replicas[d].emplace(model_, optimizer_, d, devices_, *run.collective);
            if constexpr (requires { replicas[d]->capture_steps(true); }) {
              replicas[d]->capture_steps(options_.capture_steps);
            }
          } catch (...) {
            made.count_down();
            throw;
          }
          made.arrive_and_wait();
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
    for (auto& replica : replicas) {
      if constexpr (requires { replica->captured_steps(); }) {
        result.captured_steps += replica->captured_steps();
      }
    }
    model_ = std::move(replicas.front()->model());
    optimizer_ = std::move(replicas.front()->optimizer());
    return result;
  }

  /// What the device threads of one `fit` call share.
  template <class Train, class Valid, class R>
  struct FitState {
    std::size_t first_epoch = 0;
    // Whether the checkpoint resumed from came after the first epoch's last step: its loader
    // state is the next epoch's start, and the first epoch has only its end left to do.
    bool first_epoch_stepped = false;
    std::size_t first_step = 0;
    StepOutput resumed_sums;
    std::unique_ptr<typename R::Collective> collective;
    std::vector<Train> train;
    std::vector<Valid> valid;
    detail::EpochReport* report = nullptr;  // used by device 0 only
    FitResult* result = nullptr;            // written by device 0 only
    std::mutex error_mutex;
    std::exception_ptr error;
  };

  /// The collective the replicas sum through: `options.make_collective`'s or the backend's,
  /// behind `AnyCollective` for host replicas; the backend's own for device replicas, whose
  /// tensors only it can sum.
  template <class R>
  std::unique_ptr<typename R::Collective> make_collective() const {
    if constexpr (R::sums_on_host) {
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

  /// The step loop of device `d`: every epoch, its batches, each one's step (the model's
  /// pass, the all-reduce, the optimizer step), checkpoints and an early stop between steps;
  /// then validation and the epoch's exchange, and device 0 reports the epoch and checkpoints.
  template <class Train, class Valid,
            Replica<typename Train::batch_type, typename Valid::batch_type> R>
  void train_on_device(FitState<Train, Valid, R>& run, R& replica, std::size_t d) {
    std::size_t global_step = run.first_step;
    for (std::size_t epoch = run.first_epoch; epoch < options_.epochs; ++epoch) {
      auto& loader = run.train[d];
      const bool steps_done = epoch == run.first_epoch && run.first_epoch_stepped;
      if (!steps_done) loader.set_epoch(epoch);  // the learner's epoch, whatever the loader did
      const std::size_t steps = loader.layout(epoch).num_batches;
      std::vector<float> rates(steps);  // the schedule's, as each step below takes it
      for (std::size_t s = 0; s < steps; ++s) rates[s] = schedule_(global_step + s);
      replica.begin_epoch(steps, rates);
      const StepOutput resumed = epoch == run.first_epoch ? run.resumed_sums : StepOutput{};
      detail::StepTally tally(resumed, run.result->step_losses);  // device 0's
      const detail::ProgressLine progress(options_, epoch, steps, R::sums_on_host);
      detail::DataWait wait;
      float learning_rate = schedule_(global_step);
      const auto epoch_start = detail::LearnerClock::now();

      if (!steps_done) {
        auto range = loader.iter();
        wait.start();
        auto it = range.begin();
        wait.stop();
        for (std::size_t step = 0; it != range.end(); ++step) {
          learning_rate = schedule_(global_step);
          replica.step(*it, learning_rate);
          ++global_step;
          if (d == 0) {
            run.result->global_step = global_step;
            if (progress.due(step)) {
              tally.settle(replica);
              progress.show(step, tally.sums());
            }
          }
          if (checkpoints_.due_after_step(global_step)) {
            const std::vector<float> state = replica.whole_optimizer_state();
            if (d == 0) {
              tally.settle(replica);
              checkpoints_.write(
                  replica, state,
                  TrainingProgress{epoch, global_step, loader.state(), tally.sums()});
            }
          }
          if (options_.stop_after_steps != 0 && global_step >= options_.stop_after_steps) {
            if (d == 0) {
              tally.settle(replica);
              run.result->stopped_early = true;
            }
            replica.finish();
            return;
          }
          wait.start();
          ++it;
          wait.stop();
        }
      }
      if (d == 0) tally.settle(replica);
      const double train_seconds = detail::seconds_since(epoch_start);

      // Validation, split over the devices too; padding is excluded by the model.
      for (auto& batch : run.valid[d].iter()) replica.valid(batch);
      const StepOutput valid_sums = replica.take_valid_sums();
      detail::EpochExchange exchange(devices_.size(), d, valid_sums, wait.seconds(),
                                     replica.parameters());
      run.collective->all_reduce_sum(d, exchange.values());
      exchange.check_replicas(epoch);
      const std::vector<float> state =
          checkpoints_.writes() ? replica.whole_optimizer_state() : std::vector<float>{};
      if (d != 0) continue;

      run.report->add({.epoch = epoch,
                       .train = tally.sums(),
                       .trained_items = tally.sums().count - resumed.count,
                       .seconds = train_seconds,
                       .learning_rate = learning_rate,
                       .valid = exchange.valid_sums(),
                       .wait_seconds = exchange.wait_seconds(),
                       .replaced_samples = stoke::replaced_samples(loader, epoch)});
      if (checkpoints_.writes()) {
        checkpoints_.write(replica, state,
                           TrainingProgress{epoch + 1, global_step, loader.state(), {}});
      }
    }
    replica.finish();
  }

  Model model_;
  Optim optimizer_;
  Schedule schedule_;
  std::vector<device_t<B>> devices_;
  LearnerOptions options_;
  detail::CheckpointPolicy checkpoints_{options_};
};

}  // namespace stoke

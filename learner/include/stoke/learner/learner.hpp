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
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <stoke/core/collective.hpp>
#include <stoke/data/split.hpp>
#include <stoke/data/training_loader.hpp>
#include <stoke/learner/checkpoint.hpp>
#include <stoke/learner/metrics.hpp>
#include <stoke/learner/optim/optimizer.hpp>
#include <stoke/learner/optim/schedule.hpp>
#include <stoke/learner/optim/shard_state.hpp>
#include <stoke/learner/options.hpp>
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
    if (devices_.empty()) throw std::invalid_argument("stoke: a Learner needs a device");
  }

  /// The trained model (replica 0).
  [[nodiscard]] const Model& model() const noexcept { return model_; }
  /// The optimizer with its whole state (after `fit`, as replica 0 would hold it unsharded).
  [[nodiscard]] const Optim& optimizer() const noexcept { return optimizer_; }
  /// The devices trained on.
  [[nodiscard]] const std::vector<device_t<B>>& devices() const noexcept { return devices_; }
  /// The checkpoint file in `options.checkpoint_dir`.
  [[nodiscard]] std::filesystem::path checkpoint_path() const {
    return options_.checkpoint_dir / "checkpoint.safetensors";
  }

  /// Trains on `train` and evaluates on `valid` every epoch, until `options.epochs` epochs are
  /// done. Both loaders are split over the devices (they need `Remainder::drop` or `pad`).
  template <TrainingLoader Train, SplittableLoader Valid>
    requires TrainStep<Model, typename Train::batch_type> &&
             ValidStep<Model, typename Valid::batch_type>
  FitResult fit(Train train, Valid valid) {
    FitResult result;
    Run<Train, Valid> run;
    if (options_.resume && !options_.checkpoint_dir.empty() &&
        std::filesystem::exists(checkpoint_path())) {
      Checkpoint checkpoint =
          load_checkpoint(checkpoint_path(), model_, model_.parameters().size());
      std::ranges::copy(checkpoint.parameters, model_.parameters().begin());
      optimizer_.load_state(checkpoint.optimizer_state);
      train.restore(checkpoint.progress.loader);
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
    run.collective =
        options_.make_collective
            ? std::make_unique<AnyCollective>(options_.make_collective(devices_.size()))
            : std::make_unique<AnyCollective>(B::make_collective(devices_));
    run.train = split(train, devices_);
    run.valid = split(valid, devices_);
    std::vector<Replica> replicas(devices_.size(), Replica{model_, optimizer_});
    if constexpr (ElementwiseOptimizer<Optim>) {
      if (sharded()) {  // each replica's optimizer holds the state of its shard alone
        const std::size_t parameters = model_.parameters().size();
        const std::vector<float> whole = optimizer_.state();
        for (std::size_t d = 0; d < devices_.size(); ++d) {
          replicas[d].optimizer.load_state(
              shard_state<Optim>(whole, parameters, shard_of(parameters, d, devices_.size())));
        }
      }
    }

    std::vector<std::thread> threads;
    for (std::size_t d = 0; d < devices_.size(); ++d) {
      threads.emplace_back([&, d] {
        try {
          train_on_device(run, replicas[d], d);
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
    model_ = std::move(replicas.front().model);
    optimizer_ = std::move(replicas.front().optimizer);
    return result;
  }

 private:
  using Clock = std::chrono::steady_clock;

  struct Replica {
    Model model;
    Optim optimizer;
  };

  /// What the device threads of one `fit` call share.
  template <class Train, class Valid>
  struct Run {
    std::size_t first_epoch = 0;
    std::size_t first_step = 0;
    StepOutput resumed_sums;
    std::unique_ptr<AnyCollective> collective;
    std::vector<Train> train;
    std::vector<Valid> valid;
    MetricsCsv* csv = nullptr;
    FitResult* result = nullptr;  // written by device 0 only
    std::mutex error_mutex;
    std::exception_ptr error;
  };

  /// Whether the optimizer step is sharded over the devices.
  [[nodiscard]] bool sharded() const noexcept {
    return ElementwiseOptimizer<Optim> && devices_.size() > 1;
  }

  /// Whether checkpoints are written.
  [[nodiscard]] bool checkpointing() const noexcept {
    return !options_.checkpoint_dir.empty() && options_.write_checkpoints;
  }

  static double seconds_since(Clock::time_point start) {
    return std::chrono::duration<double>(Clock::now() - start).count();
  }

  /// The training loop of device `d`: every epoch, its batches, the all-reduce and the
  /// optimizer step; then validation, the epoch's metrics and a checkpoint (device 0).
  template <class R>
  void train_on_device(R& run, Replica& replica, std::size_t d) {
    auto& collective = *run.collective;
    const std::size_t devices = devices_.size();
    const std::size_t parameters = replica.model.parameters().size();
    std::vector<float> reduced(parameters + 3);  // gradient sums, loss sum, count, correct
    const auto gradients = std::span(reduced).first(parameters);
    // The parameters this device's optimizer steps: all of them, or its shard.
    const Shard own = sharded() ? shard_of(parameters, d, devices) : Shard{0, parameters};
    const auto own_gradients = gradients.subspan(own.begin, own.size());
    std::size_t global_step = run.first_step;

    for (std::size_t epoch = run.first_epoch; epoch < options_.epochs; ++epoch) {
      StepOutput sums = epoch == run.first_epoch ? run.resumed_sums : StepOutput{};
      double wait = 0.0;
      float learning_rate = schedule_(global_step);
      const auto epoch_start = Clock::now();
      auto& loader = run.train[d];
      loader.set_epoch(epoch);  // the learner's epoch, whatever the loader did before
      auto range = loader.iter();
      auto waited = Clock::now();
      auto it = range.begin();
      wait += seconds_since(waited);
      const std::size_t steps = loader.layout(epoch).num_batches;
      std::size_t step_in_epoch = 0;
      for (; it != range.end(); ++step_in_epoch) {
        const StepOutput local = replica.model.train_step(*it, gradients);
        reduced[parameters] = static_cast<float>(local.loss_sum);
        reduced[parameters + 1] = static_cast<float>(local.count);
        reduced[parameters + 2] = static_cast<float>(local.correct);
        collective.all_reduce_sum(d, reduced);
        const StepOutput step{reduced[parameters],
                              static_cast<std::size_t>(reduced[parameters + 2]),
                              static_cast<std::size_t>(reduced[parameters + 1])};
        learning_rate = schedule_(global_step);
        if (step.count > 0) {
          const float scale = 1.0f / static_cast<float>(step.count);
          for (float& g : own_gradients) g *= scale;
          const std::span<float> weights = replica.model.parameters();
          replica.optimizer.step(weights.subspan(own.begin, own.size()), own_gradients,
                                 learning_rate);
          if (sharded()) collective.all_gather(d, weights);
        }
        sums += step;
        ++global_step;
        if (d == 0) {
          run.result->step_losses.push_back(
              step.count > 0 ? static_cast<float>(step.loss_sum / static_cast<double>(step.count))
                             : 0.0f);
          run.result->global_step = global_step;
          if (options_.live_progress && options_.log != nullptr) {
            *options_.log << fmt::format("\repoch {}/{} step {}/{} loss {:.4f}   ", epoch + 1,
                                         options_.epochs, step_in_epoch + 1, steps,
                                         sums.loss_sum / static_cast<double>(
                                                             std::max<std::size_t>(1, sums.count)))
                          << std::flush;
          }
        }
        if (checkpointing() && options_.checkpoint_every_steps != 0 &&
            global_step % options_.checkpoint_every_steps == 0) {
          const std::vector<float> state = whole_optimizer_state(collective, replica, d);
          if (d == 0) {
            checkpoint(replica, state, TrainingProgress{epoch, global_step, loader.state(), sums});
          }
        }
        if (options_.stop_after_steps != 0 && global_step >= options_.stop_after_steps) {
          if (d == 0) run.result->stopped_early = true;
          finish(collective, replica, d);
          return;
        }
        waited = Clock::now();
        ++it;
        wait += seconds_since(waited);
      }
      const double train_seconds = seconds_since(epoch_start);

      // Validation, split over the devices too; padding is excluded by the model.
      StepOutput valid_sums;
      for (auto& batch : run.valid[d].iter()) valid_sums += replica.model.valid_step(batch);

      // One all-reduce gathers the validation sums, every device's wait time and a checksum
      // of every replica (slot d is device d's; the others add zeros).
      std::vector<float> epoch_values(3 + 2 * devices, 0.0f);
      epoch_values[0] = static_cast<float>(valid_sums.loss_sum);
      epoch_values[1] = static_cast<float>(valid_sums.count);
      epoch_values[2] = static_cast<float>(valid_sums.correct);
      epoch_values[3 + d] = static_cast<float>(wait);
      epoch_values[3 + devices + d] = checksum(replica.model.parameters());
      collective.all_reduce_sum(d, epoch_values);
      for (std::size_t k = 1; k < devices; ++k) {
        if (epoch_values[3 + devices + k] != epoch_values[3 + devices]) {
          throw std::logic_error("stoke: Learner: the replica on device " + std::to_string(k) +
                                 " diverged from device 0 in epoch " + std::to_string(epoch));
        }
      }
      const std::vector<float> state =
          checkpointing() ? whole_optimizer_state(collective, replica, d) : std::vector<float>{};
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
    finish(collective, replica, d);
  }

  /// The whole optimizer state: replica `d`'s own, or, when sharded, the header (the same on
  /// every device) and every per-parameter array all-gathered from the devices' shards.
  /// Every device calls it at the same point.
  std::vector<float> whole_optimizer_state(AnyCollective& collective, const Replica& replica,
                                           std::size_t d) const {
    std::vector<float> state = replica.optimizer.state();
    if constexpr (ElementwiseOptimizer<Optim>) {
      constexpr std::size_t header = Optim::state_header;
      if (!sharded() || state.size() == header) return state;  // not sharded, or not stepped
      const std::size_t parameters = replica.model.parameters().size();
      const Shard own = shard_of(parameters, d, devices_.size());
      std::vector<float> whole(header + Optim::state_arrays * parameters, 0.0f);
      std::copy_n(state.begin(), header, whole.begin());
      for (std::size_t a = 0; a < Optim::state_arrays; ++a) {
        const auto array = std::span(whole).subspan(header + a * parameters, parameters);
        std::copy_n(state.begin() + static_cast<std::ptrdiff_t>(header + a * own.size()),
                    own.size(), array.begin() + static_cast<std::ptrdiff_t>(own.begin));
        collective.all_gather(d, array);
      }
      return whole;
    }
    return state;
  }

  /// The end of training on device `d`: replica 0's optimizer gets the whole state, which
  /// `fit` keeps.
  void finish(AnyCollective& collective, Replica& replica, std::size_t d) const {
    if (!sharded()) return;
    const std::vector<float> whole = whole_optimizer_state(collective, replica, d);
    if (d == 0) replica.optimizer.load_state(whole);
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
  void checkpoint(Replica& replica, std::span<const float> state,
                  const TrainingProgress& progress) const {
    save_checkpoint(checkpoint_path(), replica.model, replica.model.parameters(), state, progress);
  }

  Model model_;
  Optim optimizer_;
  Schedule schedule_;
  std::vector<device_t<B>> devices_;
  LearnerOptions options_;
};

}  // namespace stoke

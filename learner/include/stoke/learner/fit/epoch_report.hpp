#pragma once
/// @file
/// `detail::EpochReport`: an epoch's metrics, made from its sums and reported where
/// `LearnerOptions` says (the fit's result, the CSV log, the console).

#include <cstddef>
#include <ostream>
#include <utility>
#include <vector>

#include <stoke/learner/metrics.hpp>
#include <stoke/learner/options.hpp>
#include <stoke/learner/train_step.hpp>

namespace stoke::detail {

/// What device 0 knows of an epoch at its end, from which its `EpochMetrics` are made.
struct EpochTotals {
  std::size_t epoch = 0;             ///< which epoch (0-based)
  StepOutput train;                  ///< its training sums, those before a resume included
  std::size_t trained_items = 0;     ///< the items trained on in this run (timed)
  double seconds = 0.0;              ///< the wall time of its training
  float learning_rate = 0.0f;        ///< at its last step
  StepOutput valid;                  ///< the validation sums of every device
  std::vector<double> wait_seconds;  ///< every device's data wait
  std::size_t replaced_samples = 0;  ///< samples the training batcher replaced
};

/// The metrics of an epoch from its totals.
inline EpochMetrics epoch_metrics(EpochTotals totals) {
  const auto mean = [](double sum, std::size_t count) {
    return count == 0 ? 0.0 : sum / static_cast<double>(count);
  };
  EpochMetrics metrics;
  metrics.epoch = totals.epoch;
  metrics.train_loss = mean(totals.train.loss_sum, totals.train.count);
  metrics.train_accuracy = mean(static_cast<double>(totals.train.correct), totals.train.count);
  metrics.valid_items = totals.valid.count;
  metrics.valid_loss = mean(totals.valid.loss_sum, totals.valid.count);
  metrics.valid_accuracy = mean(static_cast<double>(totals.valid.correct), totals.valid.count);
  metrics.seconds = totals.seconds;
  metrics.samples_per_second =
      totals.seconds > 0 ? static_cast<double>(totals.trained_items) / totals.seconds : 0.0;
  metrics.learning_rate = totals.learning_rate;
  metrics.wait_seconds = std::move(totals.wait_seconds);
  metrics.replaced_samples = totals.replaced_samples;
  return metrics;
}

/// Where device 0 reports every epoch: the fit's list of epochs, the CSV log and the log
/// stream of `LearnerOptions` (after the live progress line, if any).
class EpochReport {
 public:
  /// Reports into `epochs` and `csv`, and to `options.log`.
  EpochReport(const LearnerOptions& options, MetricsCsv& csv, std::vector<EpochMetrics>& epochs)
      : log_(options.log),
        live_(options.live_progress),
        epochs_total_(options.epochs),
        csv_(&csv),
        epochs_(&epochs) {}

  /// Reports the epoch of `totals`.
  void add(EpochTotals totals) {
    const EpochMetrics metrics = epoch_metrics(std::move(totals));
    epochs_->push_back(metrics);
    csv_->write(metrics);
    if (log_ != nullptr) {
      if (live_) *log_ << '\r';
      *log_ << describe(metrics, epochs_total_) << std::endl;
    }
  }

 private:
  std::ostream* log_;
  bool live_;
  std::size_t epochs_total_;
  MetricsCsv* csv_;
  std::vector<EpochMetrics>* epochs_;
};

}  // namespace stoke::detail

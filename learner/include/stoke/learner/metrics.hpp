#pragma once
/// @file
/// Per-epoch training metrics, their CSV log and their console lines.

#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <ostream>
#include <string>
#include <system_error>
#include <vector>

#include <fmt/format.h>

#include <stoke/core/error.hpp>

namespace stoke {

/// What one epoch of training measured.
struct EpochMetrics {
  std::size_t epoch = 0;             ///< which epoch (0-based)
  double train_loss = 0.0;           ///< mean loss over the epoch's real training items
  double train_accuracy = 0.0;       ///< fraction of them predicted right
  double valid_loss = 0.0;           ///< mean loss over the validation set (padding excluded)
  double valid_accuracy = 0.0;       ///< fraction of it predicted right
  std::size_t valid_items = 0;       ///< validation items counted
  double samples_per_second = 0.0;   ///< training items per second of the epoch
  double seconds = 0.0;              ///< wall time of the epoch's training
  float learning_rate = 0.0f;        ///< at the epoch's last step
  std::vector<double> wait_seconds;  ///< per device: time its steps waited for data
  /// samples the training loader's batcher replaced this epoch (`ReplacingBatcher`: bad
  /// images under a bad-sample policy), in this process
  std::size_t replaced_samples = 0;
};

/// Appends one line per epoch to a CSV file (header first when the file is new or reset).
class MetricsCsv {
 public:
  /// Logs to `path`; `append` keeps the lines already there (resuming), else starts anew.
  MetricsCsv(std::filesystem::path path, bool append) : path_(std::move(path)) {
    if (path_.empty()) return;
    const bool has_lines =
        append && std::filesystem::exists(path_) && std::filesystem::file_size(path_) > 0;
    out_.open(path_, append ? std::ios::app : std::ios::trunc);
    if (!out_) throw Error("stoke: cannot open metrics log '" + path_.string() + "'");
    header_written_ = has_lines;
  }

  /// Writes the line of `metrics` and flushes it; throws `stoke::Error` naming the log and the
  /// system's reason when the line cannot be written (a full disk).
  void write(const EpochMetrics& metrics) {
    if (path_.empty()) return;
    errno = 0;
    if (!header_written_) {
      out_ << "epoch,train_loss,train_accuracy,valid_loss,valid_accuracy,samples_per_second,"
              "seconds,learning_rate,replaced_samples";
      for (std::size_t d = 0; d < metrics.wait_seconds.size(); ++d) out_ << ",wait_s_device" << d;
      out_ << '\n';
      header_written_ = true;
    }
    out_ << fmt::format("{},{:.6f},{:.6f},{:.6f},{:.6f},{:.1f},{:.3f},{:.6g},{}", metrics.epoch,
                        metrics.train_loss, metrics.train_accuracy, metrics.valid_loss,
                        metrics.valid_accuracy, metrics.samples_per_second, metrics.seconds,
                        metrics.learning_rate, metrics.replaced_samples);
    for (const double wait : metrics.wait_seconds) out_ << fmt::format(",{:.4f}", wait);
    out_ << '\n';
    out_.flush();
    if (!out_) {
      const int error = errno;
      throw Error("stoke: cannot write epoch " + std::to_string(metrics.epoch) +
                  " to the metrics log '" + path_.string() + "': " +
                  (error != 0 ? std::generic_category().message(error) : "the write failed"));
    }
  }

 private:
  std::filesystem::path path_;
  std::ofstream out_;
  bool header_written_ = false;
};

/// The console line of an epoch.
inline std::string describe(const EpochMetrics& metrics, std::size_t epochs) {
  std::string waits;
  for (std::size_t d = 0; d < metrics.wait_seconds.size(); ++d) {
    waits += fmt::format("{}{:.2f}", d == 0 ? "" : "/", metrics.wait_seconds[d]);
  }
  return fmt::format(
      "epoch {}/{}: train loss {:.4f} acc {:.4f} | valid loss {:.4f} acc {:.4f} | {:.0f} "
      "samples/s | {:.1f} s | data wait per device {} s | lr {:.4g}{}",
      metrics.epoch + 1, epochs, metrics.train_loss, metrics.train_accuracy, metrics.valid_loss,
      metrics.valid_accuracy, metrics.samples_per_second, metrics.seconds, waits,
      metrics.learning_rate,
      metrics.replaced_samples == 0
          ? std::string()
          : fmt::format(" | {} bad sample{} replaced", metrics.replaced_samples,
                        metrics.replaced_samples == 1 ? "" : "s"));
}

/// Whether standard output is a terminal (live progress lines) or not (plain lines).
inline bool stdout_is_terminal() {
  return ::isatty(STDOUT_FILENO) == 1;
}

}  // namespace stoke

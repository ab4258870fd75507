#pragma once
/// @file
/// `StepJournal`: a text file that records, for every training step on every device, the
/// dataset indices the step trained on, so that a run killed and resumed any number of times
/// can be checked for every sample used exactly once in its committed steps.

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <filesystem>
#include <mutex>
#include <span>
#include <string>
#include <system_error>

namespace kill_and_resume {

/// An append-only journal of training steps, shared by the devices' threads.
///
/// Format, one record a line: `run <G>` when a process starts from global step `G` (0, or the
/// checkpoint's step when resuming); then `step <k> <epoch> <s> <padding> <i,i,...>` for every
/// step a device trains: `k` counts the device's steps in this process from 1 (its global
/// step is `G + k`), then the batch's epoch, its step in the epoch, its padding and its dataset
/// indices. Each record is one `write` to a file opened
/// with `O_APPEND`, so a process killed at any moment leaves whole records, and at most a
/// partial last line, which readers ignore.
class StepJournal {
 public:
  /// Opens (or creates) the journal at `path` for appending.
  explicit StepJournal(const std::filesystem::path& path)
      : fd_(::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0666)) {
    if (fd_ < 0) {
      throw std::system_error(errno, std::generic_category(), "open journal " + path.string());
    }
  }
  StepJournal(const StepJournal&) = delete;
  StepJournal& operator=(const StepJournal&) = delete;
  ~StepJournal() { ::close(fd_); }

  /// Records that a process starts training from global step `first_step`.
  void record_run(std::size_t first_step) { append("run " + std::to_string(first_step) + "\n"); }

  /// Records a device's `k`-th step in this process (from 1): its `epoch`, its `step` in the
  /// epoch, its `padding` and its dataset `indices`.
  void record_step(std::size_t k, std::size_t epoch, std::size_t step, std::size_t padding,
                   std::span<const std::size_t> indices) {
    std::string line = "step " + std::to_string(k) + ' ' + std::to_string(epoch) + ' ' +
                       std::to_string(step) + ' ' + std::to_string(padding) + ' ';
    for (std::size_t k = 0; k < indices.size(); ++k) {
      if (k != 0) line += ',';
      line += std::to_string(indices[k]);
    }
    append(line + '\n');
  }

 private:
  /// Writes `record` with one `write` call (whole, or it throws).
  void append(const std::string& record) {
    const std::lock_guard lock(mutex_);
    const ::ssize_t written = ::write(fd_, record.data(), record.size());
    if (written != static_cast<::ssize_t>(record.size())) {
      throw std::system_error(errno, std::generic_category(), "append to the step journal");
    }
  }

  int fd_;
  std::mutex mutex_;
};

}  // namespace kill_and_resume

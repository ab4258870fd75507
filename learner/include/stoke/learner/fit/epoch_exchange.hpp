#pragma once
/// @file
/// `detail::EpochExchange`: what the devices sum in one all-reduce at an epoch's end, and the
/// check that the replicas stayed identical.

#include <cstddef>
#include <span>
#include <string>
#include <vector>

#include <stoke/core/error.hpp>
#include <stoke/learner/kernels/device_training.hpp>
#include <stoke/learner/replica/step_tail.hpp>
#include <stoke/learner/train_step.hpp>

namespace stoke::detail {

/// One device's part of the epoch's end exchange: the validation sums (a `StepTail`), then
/// every device's data wait, then a checksum of every replica's parameters. Device `d` fills
/// slot `d` of the last two, the others add zeros, so after the all-reduce every device holds
/// every device's.
class EpochExchange {
 public:
  /// Device `d` of `devices`, with its validation sums, its data wait and its parameters.
  EpochExchange(std::size_t devices, std::size_t d, const StepOutput& valid_sums,
                double wait_seconds, std::span<const float> parameters)
      : devices_(devices), values_(reduced_tail + 2 * devices, 0.0f) {
    write_tail(std::span(values_).first(reduced_tail), valid_sums);
    values_[reduced_tail + d] = static_cast<float>(wait_seconds);
    values_[reduced_tail + devices + d] = checksum(parameters);
  }

  /// What the collective sums over the devices.
  [[nodiscard]] std::span<float> values() noexcept { return values_; }

  /// After the all-reduce: throws `stoke::Error` naming the first replica whose checksum
  /// differs from device 0's in `epoch`.
  void check_replicas(std::size_t epoch) const {
    for (std::size_t k = 1; k < devices_; ++k) {
      if (checksum_of(k) != checksum_of(0)) {
        throw Error("stoke: Learner: the replica on device " + std::to_string(k) +
                    " diverged from device 0 in epoch " + std::to_string(epoch));
      }
    }
  }

  /// After the all-reduce: the validation sums of all devices.
  [[nodiscard]] StepOutput valid_sums() const {
    return read_tail(std::span(values_).first(reduced_tail));
  }

  /// After the all-reduce: the data wait of every device, in seconds.
  [[nodiscard]] std::vector<double> wait_seconds() const {
    std::vector<double> waits;
    for (std::size_t k = 0; k < devices_; ++k) waits.push_back(values_[reduced_tail + k]);
    return waits;
  }

  /// A checksum of a replica's parameters (sums with position weights, so swaps count).
  static float checksum(std::span<const float> parameters) {
    double sum = 0.0;
    for (std::size_t i = 0; i < parameters.size(); ++i) {
      sum += static_cast<double>(parameters[i]) * static_cast<double>(1 + i % 97);
    }
    return static_cast<float>(sum);
  }

 private:
  [[nodiscard]] float checksum_of(std::size_t k) const {
    return values_[reduced_tail + devices_ + k];
  }

  std::size_t devices_;
  std::vector<float> values_;
};

}  // namespace stoke::detail

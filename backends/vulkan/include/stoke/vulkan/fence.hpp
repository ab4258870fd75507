#pragma once
/// @file
/// `vulkan::Fence`: a timeline semaphore and the value that signals one piece of work done.

#include <cstdint>
#include <memory>
#include <utility>

#include <stoke/vulkan/semaphore.hpp>

namespace stoke::vulkan {

/// Signals when a timeline semaphore reaches a value: the completion of one submission.
/// Models `stoke::Fence`. Copies share the semaphore; a default fence is already signalled.
class Fence {
 public:
  /// A fence that has already signalled.
  Fence() = default;
  /// Signals when `semaphore` reaches `value`.
  Fence(std::shared_ptr<const TimelineSemaphore> semaphore, std::uint64_t value)
      : semaphore_(std::move(semaphore)), value_(value) {}

  /// Whether the work is complete, without blocking.
  [[nodiscard]] bool ready() const { return !semaphore_ || semaphore_->value() >= value_; }
  /// Blocks until the work is complete; throws `DeviceError` if the device was lost.
  void wait() const {
    if (semaphore_) semaphore_->wait(value_);
  }

  /// The semaphore (null for a fence that was made signalled).
  [[nodiscard]] const std::shared_ptr<const TimelineSemaphore>& semaphore() const noexcept {
    return semaphore_;
  }
  /// The value the semaphore must reach.
  [[nodiscard]] std::uint64_t value() const noexcept { return value_; }

 private:
  std::shared_ptr<const TimelineSemaphore> semaphore_;
  std::uint64_t value_ = 0;
};

}  // namespace stoke::vulkan

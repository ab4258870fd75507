#pragma once
/// @file
/// `testing::ManualFence`: a fence the test signals by hand, as a simulated copy engine
/// would, for the staging tests and the test-only staging backend.

#include <condition_variable>
#include <cstddef>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <utility>

#include <stoke/core/error.hpp>

namespace stoke::testing {

/// A fence signalled by hand; a default one has already signalled. Copies share the state.
class ManualFence {
 public:
  /// A fence that has already signalled.
  ManualFence() = default;
  /// A fence that signals when `signal` is called. `on_wait`, if given, is called (without the
  /// fence's lock) each time a thread starts waiting for it before it has signalled: a simulated
  /// copy engine that copies only what somebody waits for learns of the wait there.
  static ManualFence pending(std::function<void()> on_wait = {}) {
    ManualFence fence;
    fence.state_ = std::make_shared<State>();
    fence.state_->on_wait = std::move(on_wait);
    return fence;
  }

  /// Whether it has signalled (also when it failed).
  [[nodiscard]] bool ready() const {
    if (!state_) return true;
    std::lock_guard lock(state_->mutex);
    return state_->done;
  }
  /// Blocks until it has signalled; throws `Error` if it failed.
  void wait() const {
    if (!state_) return;
    std::unique_lock lock(state_->mutex);
    ++state_->waiters;
    if (!state_->done && state_->on_wait) {
      lock.unlock();
      state_->on_wait();
      lock.lock();
    }
    state_->changed.wait(lock, [&] { return state_->done; });
    --state_->waiters;
    if (!state_->error.empty()) throw Error(state_->error);
  }
  /// Signals it; with an `error`, as a failed copy.
  void signal(std::string error = {}) const {
    {
      std::lock_guard lock(state_->mutex);
      state_->done = true;
      state_->error = std::move(error);
    }
    state_->changed.notify_all();
  }
  /// The threads blocked in `wait()` now.
  [[nodiscard]] std::size_t waiters() const {
    std::lock_guard lock(state_->mutex);
    return state_->waiters;
  }

 private:
  struct State {
    std::mutex mutex;
    std::condition_variable changed;
    bool done = false;
    std::string error;
    std::size_t waiters = 0;
    std::function<void()> on_wait;
  };
  std::shared_ptr<State> state_;
};

}  // namespace stoke::testing

#pragma once
/// @file
/// What tests wait on instead of sleeping: a `Flag` a thread sets, a `Gate` the test opens, how
/// long a test double waits (`patience`), and threads whose errors a test collects (`on_threads`).

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace stoke::testing {

/// How long a test double waits for another thread before it gives up (the test then fails).
inline constexpr std::chrono::seconds patience{10};

/// A flag a thread sets and the test waits on.
class Flag {
 public:
  /// Sets the flag and wakes every waiter.
  void set() {
    {
      const std::lock_guard lock(mutex_);
      set_ = true;
    }
    changed_.notify_all();
  }
  /// Whether it is set within `time`.
  [[nodiscard]] bool set_within(std::chrono::milliseconds time) {
    std::unique_lock lock(mutex_);
    return changed_.wait_for(lock, time, [&] { return set_; });
  }
  /// Whether it is set now.
  [[nodiscard]] bool is_set() {
    const std::lock_guard lock(mutex_);
    return set_;
  }

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  bool set_ = false;
};

/// Closed until `open()` (again after `close()`): a thread that waits on it waits until then.
class Gate {
 public:
  /// Waits until the gate is open.
  void wait() {
    std::unique_lock lock(mutex_);
    opened_.wait(lock, [&] { return open_; });
  }
  /// Opens the gate and wakes every waiter.
  void open() {
    {
      const std::lock_guard lock(mutex_);
      open_ = true;
    }
    opened_.notify_all();
  }
  /// Closes the gate for later waiters.
  void close() {
    const std::lock_guard lock(mutex_);
    open_ = false;
  }

 private:
  std::mutex mutex_;
  std::condition_variable opened_;
  bool open_ = false;
};

/// Sample `i` is `i`; reading an index from `gated_from` on waits for the gate (a dataset whose
/// workers a test holds back).
struct GatedDataset {
  std::size_t count = 0;
  std::size_t gated_from = 0;
  std::shared_ptr<Gate> gate = std::make_shared<Gate>();
  std::shared_ptr<Flag> reached = std::make_shared<Flag>();  ///< set when a read waits at the gate
  [[nodiscard]] std::size_t size() const { return count; }
  [[nodiscard]] std::size_t get(std::size_t index) const {
    if (index >= gated_from) {
      reached->set();
      gate->wait();
    }
    return index;
  }
};

/// Runs `body(participant)` on one thread per participant; returns what each threw ("" if
/// nothing).
inline std::vector<std::string> on_threads(std::size_t participants,
                                           const std::function<void(std::size_t)>& body) {
  std::vector<std::string> errors(participants);
  std::vector<std::thread> threads;
  for (std::size_t p = 0; p < participants; ++p) {
    threads.emplace_back([&, p] {
      try {
        body(p);
      } catch (const std::exception& error) {
        errors[p] = error.what();
      }
    });
  }
  for (auto& thread : threads) thread.join();
  return errors;
}

}  // namespace stoke::testing

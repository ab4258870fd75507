#pragma once
/// @file
/// `vulkan::detail::OrderedWorker`: a thread of its own that runs posted tasks one at a time,
/// in the order they were posted. The Vulkan collective gives each participant one, so the
/// participant's device thread hands the host part of a collective over and never waits for it.

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <utility>

namespace stoke::vulkan::detail {

/// Runs tasks on its own thread, in posting order. A task must not throw (it reports its own
/// failure). The destructor runs every task already posted, then joins the thread.
class OrderedWorker {
 public:
  /// Starts the thread.
  OrderedWorker() : thread_([this] { run(); }) {}
  OrderedWorker(const OrderedWorker&) = delete;
  OrderedWorker& operator=(const OrderedWorker&) = delete;
  /// Runs the tasks still posted, then joins the thread.
  ~OrderedWorker() {
    {
      const std::lock_guard lock(mutex_);
      stopping_ = true;
    }
    ready_.notify_one();
    thread_.join();
  }

  /// Queues `task` to run after every task posted before it.
  void post(std::function<void()> task) {
    {
      const std::lock_guard lock(mutex_);
      tasks_.push_back(std::move(task));
    }
    ready_.notify_one();
  }

 private:
  void run() {
    for (;;) {
      std::function<void()> task;
      {
        std::unique_lock lock(mutex_);
        ready_.wait(lock, [this] { return stopping_ || !tasks_.empty(); });
        if (tasks_.empty()) return;  // stopping, and nothing left
        task = std::move(tasks_.front());
        tasks_.pop_front();
      }
      task();
    }
  }

  std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<std::function<void()>> tasks_;
  bool stopping_ = false;
  std::thread thread_;  ///< last: starts once the queue exists
};

}  // namespace stoke::vulkan::detail

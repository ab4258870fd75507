#pragma once
/// @file
/// `vulkan::Context`: everything one stoke device owns on the Vulkan side: its `VkDevice` and
/// queue, the queue's timeline semaphore, a command pool, and its dropped buffers.

#include <algorithm>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include <vulkan/vulkan_core.h>

#include <stoke/core/device.hpp>
#include <stoke/core/error.hpp>
#include <stoke/vulkan/command_pool.hpp>
#include <stoke/vulkan/device.hpp>
#include <stoke/vulkan/error.hpp>
#include <stoke/vulkan/fence.hpp>
#include <stoke/vulkan/held_submissions.hpp>
#include <stoke/vulkan/logical_device.hpp>
#include <stoke/vulkan/retired_buffers.hpp>
#include <stoke/vulkan/semaphore.hpp>

namespace stoke::vulkan {

/// The Vulkan state of one stoke device. Every submission to its queue signals the next
/// value of its timeline semaphore, so the fence of a submission is (timeline, value); one
/// behind a gate the host has not opened is held (with those after it) until `open_gate`.
/// Thread-safe: submissions from several threads are serialised.
class Context {
 public:
  /// Dropped device buffers kept for reuse by the next buffer of the same size.
  static constexpr std::size_t kept_buffers = 8;

  /// The context of `device`, running on `logical`.
  Context(Device device, std::shared_ptr<const detail::LogicalDevice> logical)
      : device_(device),
        logical_(std::move(logical)),
        timeline_(std::make_shared<const TimelineSemaphore>(logical_)),
        pool_(logical_->handle(), logical_->physical().queue_family),
        retired_(logical_->handle(), kept_buffers) {
    timeline_->queued(0);  // a queue's timeline: host waits wait for the submission first
  }
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;
  /// Waits for all submitted work, then frees its buffers.
  ~Context() {
    try {
      wait_idle();
    } catch (...) {  // device lost: free anyway
    }
  }

  /// The stoke device.
  [[nodiscard]] const Device& device() const noexcept { return device_; }
  /// The `VkDevice`.
  [[nodiscard]] VkDevice handle() const noexcept { return logical_->handle(); }
  /// The `VkDevice`'s owner (shared by semaphores made on it).
  [[nodiscard]] const std::shared_ptr<const detail::LogicalDevice>& logical_device()
      const noexcept {
    return logical_;
  }
  /// The queue's timeline semaphore.
  [[nodiscard]] const std::shared_ptr<const TimelineSemaphore>& timeline() const noexcept {
    return timeline_;
  }
  /// The fence of timeline value `value`.
  [[nodiscard]] Fence fence(std::uint64_t value) const { return Fence(timeline_, value); }
  /// The timeline value every submission up to which has completed.
  [[nodiscard]] std::uint64_t completed() const { return timeline_->value(); }
  /// The fence of everything submitted so far.
  [[nodiscard]] Fence last_submitted() const {
    std::lock_guard lock(mutex_);
    return fence(submitted_);
  }
  /// Blocks until everything submitted so far has completed.
  void wait_idle() const { last_submitted().wait(); }

  /// Records commands with `record(VkCommandBuffer)` and submits them to the queue, to start
  /// after every fence in `waits` (fences of this device: its queue's, or a gate the host
  /// signals through `open_gate`); returns the fence of their completion without waiting.
  /// Commands that wait on a gate not yet open are held, with every later submission, until
  /// the host opens it (`open_gate`, or the gate's `TimelineSemaphore::signal`), so the queue
  /// never waits on a signal no one has made yet.
  /// Recording happens under the context's lock.
  template <class Record>
  Fence submit(Record&& record, std::span<const Fence> waits = {}) {
    detail::HeldSubmission submission;
    for (const Fence& wait : waits) {
      if (!wait.semaphore() || wait.value() == 0) continue;  // value 0: signalled at start
      if (&wait.semaphore()->device() != logical_.get()) {
        throw UsageError("stoke: vulkan: work on " + device_name(device_) +
                         " cannot wait on a fence of another device");
      }
      const VkSemaphore semaphore = wait.semaphore()->handle();
      auto& semaphores = submission.semaphores;
      const auto it = std::find(semaphores.begin(), semaphores.end(), semaphore);
      if (it == semaphores.end()) {
        semaphores.push_back(semaphore);
        submission.values.push_back(wait.value());
      } else {
        auto& value = submission.values[static_cast<std::size_t>(it - semaphores.begin())];
        value = std::max(value, wait.value());
      }
      if (wait.semaphore() != timeline_)
        submission.gates.emplace_back(wait.semaphore(), wait.value());
    }

    std::lock_guard lock(mutex_);
    release_held();
    const std::uint64_t completed = timeline_->value();
    retired_.collect(completed);
    const VkCommandBuffer commands = pool_.acquire(completed);
    submission.commands = commands;
    submission.signal = submitted_ + 1;
    try {
      const VkCommandBufferBeginInfo begin{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO, nullptr,
                                           VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT, nullptr};
      STOKE_VK_CHECK(vkBeginCommandBuffer(commands, &begin));
      record(commands);
      STOKE_VK_CHECK(vkEndCommandBuffer(commands));
      if (held_.empty() && submission.ready()) {
        queue_submit(submission);
      } else {
        for (const auto& [gate, value] : submission.gates) {
          gate->on_signal(value, [this] {
            std::lock_guard relock(mutex_);
            release_held();
          });
        }
        held_.hold(submission);
        release_held();  // a gate opened before its listener was registered
      }
    } catch (...) {
      vkResetCommandBuffer(commands, 0);
      pool_.release(commands, 0);
      throw;
    }
    submitted_ = submission.signal;
    pool_.release(commands, submission.signal);
    return fence(submission.signal);
  }

  /// Raises the host-signalled `gate` (a semaphore of this device) to `value`; the held
  /// commands whose gates are now open go to the queue (as after any `signal` of a gate).
  void open_gate(const TimelineSemaphore& gate, std::uint64_t value) { gate.signal(value); }

  /// Takes a dropped buffer: destroyed once the timeline reaches `last_use` (at once if it
  /// has), or, when `reusable_bytes` is its size, possibly kept for the next buffer of that
  /// size. How a buffer still in use by submitted work is released without waiting.
  void retire(VkBuffer buffer, VkDeviceMemory memory, std::uint64_t last_use,
              VkDeviceSize reusable_bytes = 0) noexcept {
    std::uint64_t now = 0;
    try {
      now = completed();
    } catch (...) {  // device lost: freed by the destructor
    }
    retired_.add(RetiredBuffers::Entry{buffer, memory, reusable_bytes, last_use}, now);
  }

  /// A dropped reusable buffer of `bytes` that nothing uses any more, handed over.
  [[nodiscard]] std::optional<RetiredBuffers::Entry> reuse(VkDeviceSize bytes) {
    return retired_.take(bytes, completed());
  }

  /// Dropped buffers kept for reuse now.
  [[nodiscard]] std::size_t reusable_buffers() const { return retired_.kept(); }

  /// Command buffers allocated so far (they are recycled).
  [[nodiscard]] std::size_t command_buffers() const {
    std::lock_guard lock(mutex_);
    return pool_.size();
  }

 private:
  /// Submits `submission` to the queue (the context's lock held).
  void queue_submit(const detail::HeldSubmission& submission) {
    const std::vector<VkPipelineStageFlags> stages(submission.semaphores.size(),
                                                   VK_PIPELINE_STAGE_ALL_COMMANDS_BIT);
    const VkSemaphore timeline = timeline_->handle();
    const VkTimelineSemaphoreSubmitInfo timeline_info{
        VK_STRUCTURE_TYPE_TIMELINE_SEMAPHORE_SUBMIT_INFO,
        nullptr,
        static_cast<std::uint32_t>(submission.values.size()),
        submission.values.data(),
        1,
        &submission.signal};
    const VkSubmitInfo info{VK_STRUCTURE_TYPE_SUBMIT_INFO,
                            &timeline_info,
                            static_cast<std::uint32_t>(submission.semaphores.size()),
                            submission.semaphores.data(),
                            stages.data(),
                            1,
                            &submission.commands,
                            1,
                            &timeline};
    STOKE_VK_CHECK(vkQueueSubmit(logical_->queue(), 1, &info, VK_NULL_HANDLE));
    timeline_->queued(submission.signal);
  }

  /// Submits the held commands whose gates are open, in order (the context's lock held). One
  /// the queue refuses has its value signalled from the host, so nothing waits for it forever.
  void release_held() {
    held_.release_ready([this](const detail::HeldSubmission& submission) {
      try {
        queue_submit(submission);
      } catch (...) {
        timeline_->signal(submission.signal);
        timeline_->queued(submission.signal);
      }
    });
  }

  Device device_;
  std::shared_ptr<const detail::LogicalDevice> logical_;
  std::shared_ptr<const TimelineSemaphore> timeline_;
  mutable std::mutex mutex_;  ///< guards the queue, the pool and `submitted_`
  CommandPool pool_;
  std::uint64_t submitted_ = 0;
  detail::HeldSubmissions held_;  ///< commands behind a gate not yet open, in queue order
  RetiredBuffers retired_;        ///< destroyed (freeing its buffers) after the wait in ~Context
};

}  // namespace stoke::vulkan

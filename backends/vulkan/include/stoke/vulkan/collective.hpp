#pragma once
/// @file
/// `vulkan::HostStagedCollective`: all_reduce and all_gather between Vulkan devices of one
/// process, staged through host memory (download, combine on the host in a fixed order, upload).
/// The device thread that calls it does not wait: the host part runs on a thread of the
/// participant's own, and the result's upload is a submission gated by a timeline semaphore
/// that thread opens (`Context::open_gate`), so the work after it on the device (the
/// optimizer) is ordered by fences.

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <exception>
#include <future>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include <stoke/core/device.hpp>
#include <stoke/core/error.hpp>
#include <stoke/core/shared_memory_collective.hpp>
#include <stoke/vulkan/buffer.hpp>
#include <stoke/vulkan/device.hpp>
#include <stoke/vulkan/fence.hpp>
#include <stoke/vulkan/ordered_worker.hpp>
#include <stoke/vulkan/registry.hpp>
#include <stoke/vulkan/semaphore.hpp>
#include <stoke/vulkan/staged_copies.hpp>

namespace stoke::vulkan {

/// Sums buffers across Vulkan devices, one participant thread per device. Models
/// `stoke::Collective`. A device buffer is copied to host memory, summed there by the CPU
/// backend's shared-memory collective (participant 0, 1, ... in that order, so results are
/// deterministic), and copied back in place. A call on a device buffer returns at once: it
/// submits the copy out and the gated copy back, and marks the buffer written by the copy back,
/// so every later use of the buffer is ordered after the collective on the device. The host
/// sum runs on the participant's own thread, which signals the gate when the sum is in place.
/// Host buffers are summed on that thread too (in call order), the call returning with the sum.
class HostStagedCollective {
 public:
  /// A collective over `devices`: participant `k` is `devices[k]`.
  explicit HostStagedCollective(std::vector<Device> devices)
      : devices_(std::move(devices)), host_(devices_.size()) {
    for (const Device& device : devices_) {
      participants_.push_back(std::make_unique<Participant>(context(device)));
    }
  }
  HostStagedCollective(const HostStagedCollective&) = delete;
  HostStagedCollective& operator=(const HostStagedCollective&) = delete;
  /// Finishes the collectives posted (failing them once aborted), then waits for their copies
  /// back, which wait on the gates it destroys.
  ~HostStagedCollective() {
    for (auto& participant : participants_) {
      participant->worker.reset();  // runs what is posted, every gate signalled
      try {
        participant->last_copy_back.wait();
      } catch (...) {  // device lost: nothing waits on the gate any more
      }
    }
  }

  /// Number of participants.
  [[nodiscard]] std::size_t size() const noexcept { return devices_.size(); }

  /// Replaces every participant's host `values` by the element-wise sum over all of them,
  /// after the collectives this participant posted before.
  void all_reduce_sum(std::size_t participant, std::span<float> values) {
    on_host(participant,
            [this, participant, values] { host_.all_reduce_sum(participant, values); });
  }

  /// See `stoke::all_gather`: every participant's host `values` gets every participant's
  /// shard.
  void all_gather(std::size_t participant, std::span<float> values) {
    on_host(participant, [this, participant, values] { host_.all_gather(participant, values); });
  }

  /// Replaces every participant's device buffer of floats (on its own device) by the
  /// element-wise sum over all of them: enqueued, the buffer marked written by it.
  void all_reduce_sum(std::size_t participant, Buffer& values) {
    staged(participant, values,
           [this, participant](std::span<float> host) { host_.all_reduce_sum(participant, host); });
  }

  /// See `stoke::all_gather`, on every participant's device buffer of floats: enqueued, the
  /// buffer marked written by it.
  void all_gather(std::size_t participant, Buffer& values) {
    staged(participant, values,
           [this, participant](std::span<float> host) { host_.all_gather(participant, host); });
  }

  /// Wakes every waiting participant with an error; later calls fail at once.
  void abort() { host_.abort(); }

 private:
  /// One participant: its thread, the gate its thread signals and the gate values handed out.
  struct Participant {
    explicit Participant(std::shared_ptr<Context> made)
        : context(std::move(made)),
          gate(std::make_shared<const TimelineSemaphore>(context->logical_device())),
          worker(std::make_unique<detail::OrderedWorker>()) {}
    std::shared_ptr<Context> context;
    std::shared_ptr<const TimelineSemaphore> gate;
    std::uint64_t gates_issued = 0;  ///< the device thread's: values handed out so far
    Fence last_copy_back;            ///< the device thread's: waits on the last gate
    std::unique_ptr<detail::OrderedWorker> worker;
  };

  /// Runs `exchange()` on `participant`'s thread after what it posted before and returns once
  /// it has (rethrowing its error).
  template <class Exchange>
  void on_host(std::size_t participant, Exchange exchange) {
    check_participant(participant);
    auto done = std::make_shared<std::promise<void>>();
    std::future<void> result = done->get_future();
    participants_[participant]->worker->post([this, exchange, done] {
      try {
        exchange();
        done->set_value();
      } catch (...) {
        done->set_exception(first_failure(std::current_exception()));
      }
    });
    result.get();
  }

  /// Records `error` unless an earlier failure was recorded, aborts the host collective and
  /// returns the first failure (what every participant then reports).
  std::exception_ptr first_failure(std::exception_ptr error) {
    {
      const std::lock_guard lock(failure_mutex_);
      if (!failure_) failure_ = std::move(error);
      error = failure_;
    }
    host_.abort();
    return error;
  }

  /// Rethrows the first failure of a collective on a device buffer, if there was one.
  void rethrow_failure() {
    const std::lock_guard lock(failure_mutex_);
    if (failure_) std::rethrow_exception(failure_);
  }

  /// Posts `exchange` (a host collective over `participant`'s floats) on `values`: submits the
  /// copy of `values` into host memory and the copy back of the result, gated by the next value
  /// of the participant's gate, which its thread signals once the result is in host memory (or
  /// the collective failed: then every participant's next call throws the first failure). A
  /// bad argument aborts the collective, so the other participants do not wait forever.
  template <class Exchange>
  void staged(std::size_t participant, Buffer& values, Exchange exchange) {
    rethrow_failure();
    try {
      check_participant(participant);
      check_buffer(participant, values);
    } catch (...) {
      host_.abort();
      throw;
    }
    Participant& own = *participants_[participant];
    const std::size_t bytes = values.size();
    auto out = std::make_shared<Buffer>(own.context, bytes, MemoryKind::staging);
    auto back = std::make_shared<Buffer>(own.context, bytes, MemoryKind::staging);
    const Fence copied_out = detail::submit_copy_to_host(*own.context, values, *out, bytes);
    const std::uint64_t gate = ++own.gates_issued;
    own.last_copy_back =
        detail::submit_copy_from_host(*own.context, *back, values, bytes, Fence(own.gate, gate));
    own.worker->post(
        [this, exchange, out, back, copied_out, gate, opener = own.context, signal = own.gate] {
          try {
            copied_out.wait();
            std::vector<float> host(out->size() / sizeof(float));
            if (!host.empty()) std::memcpy(host.data(), out->mapped().data(), out->size());
            exchange(std::span<float>(host));
            if (!host.empty()) std::memcpy(back->mapped().data(), host.data(), back->size());
          } catch (...) {  // the device threads hear of it at their next call
            first_failure(std::current_exception());
          }
          try {
            opener->open_gate(*signal, gate);  // also after a failure: nothing waits forever
          } catch (...) {
            first_failure(std::current_exception());
          }
        });
  }

  void check_participant(std::size_t participant) const {
    if (participant >= devices_.size()) {
      throw UsageError("stoke: vulkan: participant " + std::to_string(participant) +
                       " of a collective of " + std::to_string(devices_.size()));
    }
  }

  void check_buffer(std::size_t participant, const Buffer& values) const {
    if (!(values.device() == devices_[participant])) {
      throw UsageError("stoke: vulkan: participant " + std::to_string(participant) + " is " +
                       device_name(devices_[participant]) + " but passed a buffer on " +
                       device_name(values.device()));
    }
    if (values.size() % sizeof(float) != 0) {
      throw UsageError("stoke: vulkan: a collective needs a buffer of floats, got " +
                       std::to_string(values.size()) + " bytes");
    }
  }

  std::vector<Device> devices_;
  SharedMemoryCollective host_;
  std::mutex failure_mutex_;
  std::exception_ptr failure_;  ///< the first failure of a participant's thread
  std::vector<std::unique_ptr<Participant>> participants_;  ///< last: their threads use the rest
};

}  // namespace stoke::vulkan

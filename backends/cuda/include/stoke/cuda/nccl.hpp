#pragma once
/// @file
/// NCCL for the CUDA backend (built when `STOKE_ENABLE_NCCL` found NCCL): `STOKE_NCCL_CHECK`,
/// RAII communicators, `NcclCollective` (all_reduce and all_gather over device buffers, one
/// thread per device) and `make_rank_communicators`, which bootstraps NCCL across the ranks of a
/// `stoke::ProcessGroup` by broadcasting an `ncclUniqueId` through it.

#if !defined(STOKE_CUDA_HAS_NCCL)
#error "stoke::cuda was built without NCCL (STOKE_ENABLE_NCCL is OFF)"
#endif

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <source_location>
#include <span>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <nccl.h>

#include <stoke/core/collective.hpp>
#include <stoke/core/device.hpp>
#include <stoke/core/error.hpp>
#include <stoke/cuda/buffer.hpp>
#include <stoke/cuda/device.hpp>
#include <stoke/cuda/error.hpp>
#include <stoke/cuda/fence.hpp>
#include <stoke/cuda/nccl_watchdog.hpp>
#include <stoke/cuda/runtime.hpp>
#include <stoke/dist/process_group.hpp>

/// Evaluates an NCCL call; throws a `stoke::cuda::DeviceError` (library `nccl`) naming it
/// unless it returns `ncclSuccess`.
#define STOKE_NCCL_CHECK(call) ::stoke::cuda::check((call), #call)

namespace stoke::cuda {

/// Throws a `DeviceError` (library `nccl`) unless `status` is `ncclSuccess`.
inline void check(ncclResult_t status, const char* what,
                  std::source_location where = std::source_location::current()) {
  if (status != ncclSuccess) {
    throw DeviceError(Library::nccl, static_cast<int>(status), what, ncclGetErrorString(status),
                      where);
  }
}

/// One NCCL communicator (one rank of a clique), move-only; destroyed with `ncclCommDestroy`.
class NcclComm {
 public:
  NcclComm() = default;
  /// Adopts `comm`.
  explicit NcclComm(ncclComm_t comm) : comm_(comm) {}
  NcclComm(NcclComm&& other) noexcept : comm_(std::exchange(other.comm_, nullptr)) {}
  NcclComm& operator=(NcclComm&& other) noexcept {
    std::swap(comm_, other.comm_);
    return *this;
  }
  ~NcclComm() {
    if (comm_ != nullptr) ncclCommDestroy(comm_);
  }
  /// The communicator.
  [[nodiscard]] ncclComm_t get() const noexcept { return comm_; }
  /// Aborts its operations in flight and frees it.
  void abort() noexcept {
    if (comm_ != nullptr) ncclCommAbort(std::exchange(comm_, nullptr));
  }

 private:
  ncclComm_t comm_ = nullptr;
};

/// Sums (and all-gathers) float buffers in device memory across CUDA devices with NCCL, one
/// participant thread per device. Models `stoke::Collective`: participant `k` passes a span of
/// device memory on `devices[k]` (such as `Buffer::floats()`) or a `Buffer` there; the
/// collective runs on `k`'s own stream. On a span the call returns once the result is in
/// place; on a `Buffer` it returns at once, the buffer marked written by the collective (an
/// event later work waits on with `cudaStreamWaitEvent`, as the optimizer does): no host wait.
/// A thread of its own (`detail::NcclWatchdog`) watches the collectives in flight for the
/// communicators' asynchronous errors and `timeout()`, aborts on a failure, and the failure is
/// thrown by every participant's next call. `abort()` aborts the communicators, which wakes
/// every participant waiting for a peer that will never come.
class NcclCollective {
 public:
  /// A clique over the local `devices` (`ncclCommInitAll`); devices must be on distinct GPUs
  /// (NCCL takes one rank a GPU: several lanes of one GPU are a `UsageError`; `LaneCollective`
  /// sums them on the device first and calls NCCL among one leader per GPU).
  explicit NcclCollective(std::vector<Device> devices) : devices_(std::move(devices)) {
    if (devices_.empty()) throw UsageError("stoke: cuda: a collective needs a device");
    std::vector<int> ordinals;
    for (const Device& device : devices_) {
      if (std::find(ordinals.begin(), ordinals.end(), device.ordinal) != ordinals.end()) {
        std::ostringstream message;
        message << "stoke: cuda: " << device << " shares GPU " << device.ordinal
                << " with another device of the collective; NCCL takes one device a GPU, and "
                   "lanes (several devices on one GPU) sum through cuda::LaneCollective";
        throw UsageError(message.str());
      }
      ordinals.push_back(device.ordinal);
    }
    std::vector<ncclComm_t> comms(devices_.size());
    STOKE_NCCL_CHECK(
        ncclCommInitAll(comms.data(), static_cast<int>(comms.size()), ordinals.data()));
    for (ncclComm_t comm : comms) comms_.emplace_back(comm);
    make_streams();
  }
  /// A collective over communicators already made (such as `make_rank_communicators`);
  /// participant `k` is `devices[k]` with `comms[k]`.
  NcclCollective(std::vector<Device> devices, std::vector<NcclComm> comms)
      : devices_(std::move(devices)), comms_(std::move(comms)) {
    if (devices_.size() != comms_.size() || devices_.empty()) {
      throw UsageError("stoke: cuda: a collective needs one communicator per device");
    }
    make_streams();
  }

  /// Number of participants.
  [[nodiscard]] std::size_t size() const noexcept { return devices_.size(); }
  /// Participant `k`'s device; throws `UsageError` unless `k` is one of this collective's.
  [[nodiscard]] const Device& device(std::size_t participant) const {
    if (participant >= devices_.size()) throw not_a_participant(participant);
    return devices_[participant];
  }

  /// Replaces every participant's device `values` by the element-wise sum over all of them
  /// (and over every rank, for communicators spanning ranks). While it waits it polls the
  /// stream, the communicator's asynchronous error (a peer that failed) and `abort()`; past
  /// `timeout()` it aborts the collective and throws, naming the participant and its device.
  void all_reduce_sum(std::size_t participant, std::span<float> values) {
    run(participant, "all_reduce",
        [&](ncclComm_t comm, cudaStream_t stream) { reduce(comm, values, stream); });
  }
  /// `all_reduce_sum` over a device buffer of floats, after the work queued on it: queued,
  /// the buffer marked written by it, without waiting.
  void all_reduce_sum(std::size_t participant, Buffer& values) {
    run_fenced(participant, "all_reduce", values, [&](ncclComm_t comm, cudaStream_t stream) {
      reduce(comm, floats_after_uses(participant, values, stream), stream);
    });
  }

  /// See `stoke::all_gather`: every participant's device `values` receives, in each shard
  /// `parameter_shard(values.size(), k, size())`, participant `k`'s values there. Across ranks
  /// (communicators from `make_rank_communicators`) every rank receives the shards of rank
  /// 0's participants: the replicas of every rank hold the same values, as
  /// `dist::GroupCollective::all_gather` assumes. Waits, times out and aborts as
  /// `all_reduce_sum` does.
  void all_gather(std::size_t participant, std::span<float> values) {
    run(participant, "all_gather",
        [&](ncclComm_t comm, cudaStream_t stream) { gather(comm, participant, values, stream); });
  }
  /// `all_gather` over a device buffer of floats, after the work queued on it: queued, the
  /// buffer marked written by it, without waiting.
  void all_gather(std::size_t participant, Buffer& values) {
    run_fenced(participant, "all_gather", values, [&](ncclComm_t comm, cudaStream_t stream) {
      gather(comm, participant, floats_after_uses(participant, values, stream), stream);
    });
  }

  /// Wakes every waiting participant with an error (aborts the communicators); later calls
  /// fail at once. Participants read a communicator only under a shared lock, so it is never
  /// aborted while one of them is inside an NCCL call on it.
  void abort() {
    if (aborted_.exchange(true)) return;
    const std::unique_lock lock(comms_mutex_);
    for (NcclComm& comm : comms_) comm.abort();
  }

  /// How long a participant waits for its all_reduce or all_gather before it gives up
  /// (default 5 minutes).
  [[nodiscard]] std::chrono::milliseconds timeout() const noexcept { return timeout_; }
  /// Sets that wait (set it before the participants start).
  void set_timeout(std::chrono::milliseconds timeout) noexcept { timeout_ = timeout; }

 private:
  void make_streams() {
    for (const Device& device : devices_) streams_.emplace_back(device);
    watchdog_ = std::make_unique<detail::NcclWatchdog>(
        [this](std::size_t participant) {
          const std::shared_lock lock(comms_mutex_);
          throw_if_aborted();
          throw_async_error(participant);
        },
        [this] { abort(); });
  }

  /// Queues `enqueue(comm, stream)` (participant `participant`'s NCCL calls of `what` on
  /// `values`) on its stream under the communicators' shared lock, marks `values` written by
  /// it and hands its fence to the watchdog; returns without waiting. Throws the watchdog's
  /// failure, if it saw one. Any failure aborts the collective.
  template <class Enqueue>
  void run_fenced(std::size_t participant, const char* what, Buffer& values, Enqueue&& enqueue) {
    if (participant >= devices_.size()) {
      abort();
      throw not_a_participant(participant);
    }
    const DeviceGuard guard(devices_[participant]);
    const cudaStream_t stream = streams_[participant].handle();
    try {
      watchdog_->rethrow_failure();
      Fence done;
      {
        const std::shared_lock lock(comms_mutex_);
        throw_if_aborted();
        enqueue(comms_[participant].get(), stream);
        done = Fence(devices_[participant], stream);
      }
      values.mark_written(done);
      watchdog_->watch(participant,
                       std::string(what) + " (" + device_name(devices_[participant]) + ")", done,
                       std::chrono::steady_clock::now() + timeout_);
    } catch (...) {
      abort();
      throw;
    }
  }

  /// Throws if participant's communicator reports an asynchronous error (a peer that failed).
  void throw_async_error(std::size_t participant) const {
    ncclResult_t async = ncclSuccess;
    STOKE_NCCL_CHECK(ncclCommGetAsyncError(comms_[participant].get(), &async));
    if (async != ncclSuccess && async != ncclInProgress) {
      check(async, "the communicator (ncclCommGetAsyncError)");
    }
  }

  /// Queues the in-place sum of `values` on `stream`.
  static void reduce(ncclComm_t comm, std::span<float> values, cudaStream_t stream) {
    STOKE_NCCL_CHECK(ncclAllReduce(values.data(), values.data(), values.size(), ncclFloat, ncclSum,
                                   comm, stream));
  }

  /// Queues participant `participant`'s all_gather of `values` on `stream`: one in-place
  /// `ncclAllGather` when the communicator is this process's alone and the shards are of one
  /// size; else (NCCL gathers equal counts only) one `ncclBroadcast` of every shard from its
  /// owner, NCCL rank `k` (participant `k` of the first rank), in one NCCL group.
  void gather(ncclComm_t comm, std::size_t participant, std::span<float> values,
              cudaStream_t stream) const {
    int count = 0;
    int rank = 0;
    STOKE_NCCL_CHECK(ncclCommCount(comm, &count));
    STOKE_NCCL_CHECK(ncclCommUserRank(comm, &rank));
    const std::size_t parts = devices_.size();
    if (static_cast<std::size_t>(rank) % parts != participant) {
      throw UsageError(
          "stoke: cuda: all_gather needs participant k at NCCL rank k "
          "(modulo the participants), participant " +
          std::to_string(participant) + " is NCCL rank " + std::to_string(rank));
    }
    const std::size_t length = values.size();
    if (length == 0) return;
    if (static_cast<std::size_t>(count) == parts && length % parts == 0) {
      const ParameterShard own = parameter_shard(length, participant, parts);
      STOKE_NCCL_CHECK(ncclAllGather(values.data() + own.begin, values.data(), own.size(),
                                     ncclFloat, comm, stream));
      return;
    }
    STOKE_NCCL_CHECK(ncclGroupStart());
    try {
      for (std::size_t k = 0; k < parts; ++k) {
        const ParameterShard shard = parameter_shard(length, k, parts);
        if (shard.size() == 0) continue;
        float* at = values.data() + shard.begin;
        STOKE_NCCL_CHECK(
            ncclBroadcast(at, at, shard.size(), ncclFloat, static_cast<int>(k), comm, stream));
      }
    } catch (...) {
      (void)ncclGroupEnd();  // the group must be closed whatever failed
      throw;
    }
    STOKE_NCCL_CHECK(ncclGroupEnd());
  }

  /// The floats of `values`, once later work on `stream` waits for its last write and its
  /// uses; throws `UsageError` unless it is on `participant`'s device.
  std::span<float> floats_after_uses(std::size_t participant, const Buffer& values,
                                     cudaStream_t stream) const {
    if (values.data() != nullptr && !(values.device() == devices_[participant])) {
      throw UsageError("stoke: cuda: participant " + std::to_string(participant) + " is on " +
                       device_name(devices_[participant]) + " but passed a buffer on " +
                       device_name(values.device()));
    }
    values.enqueue_wait_for_uses(stream);
    return values.floats();
  }

  /// The error for a participant this collective does not have, raised at `where`.
  [[nodiscard]] UsageError not_a_participant(
      std::size_t participant, std::source_location where = std::source_location::current()) const {
    return UsageError("stoke: cuda: participant " + std::to_string(participant) +
                          " of a collective of " + std::to_string(devices_.size()),
                      where);
  }

  /// Queues `enqueue(comm, stream)` (participant `participant`'s NCCL calls of `what`) on its
  /// stream under the communicators' shared lock, then waits for the stream as
  /// `all_reduce_sum` describes. Any failure aborts the collective.
  template <class Enqueue>
  void run(std::size_t participant, const char* what, Enqueue&& enqueue) {
    if (participant >= devices_.size()) {
      abort();
      throw not_a_participant(participant);
    }
    const DeviceGuard guard(devices_[participant]);
    const cudaStream_t stream = streams_[participant].handle();
    try {
      {
        const std::shared_lock lock(comms_mutex_);
        throw_if_aborted();
        enqueue(comms_[participant].get(), stream);
      }
      const auto deadline = std::chrono::steady_clock::now() + timeout_;
      while (!finished(participant, stream)) {
        if (std::chrono::steady_clock::now() > deadline) {
          throw Error("stoke: cuda: the " + std::string(what) + " of participant " +
                      std::to_string(participant) + " (" + device_name(devices_[participant]) +
                      ") did not finish within " + std::to_string(timeout_.count()) +
                      " ms: a peer is missing or stalled");
        }
        std::this_thread::yield();
      }
    } catch (...) {
      abort();
      throw;
    }
  }

  void throw_if_aborted() const {
    if (aborted_.load()) throw Error("stoke: cuda: the collective was aborted");
  }

  /// Whether the work on `stream` is done; throws if it failed, if the communicator reports
  /// an asynchronous error, or if the collective was aborted.
  bool finished(std::size_t participant, cudaStream_t stream) {
    const std::shared_lock lock(comms_mutex_);
    throw_if_aborted();
    throw_async_error(participant);
    const cudaError_t status = cudaStreamQuery(stream);
    if (status == cudaErrorNotReady) return false;
    STOKE_CUDA_CHECK(status);
    return true;
  }

  std::vector<Device> devices_;
  std::vector<NcclComm> comms_;
  std::vector<Stream> streams_;
  std::atomic<bool> aborted_ = false;
  std::shared_mutex comms_mutex_;  ///< shared by participants' NCCL calls, unique for abort
  std::chrono::milliseconds timeout_ = std::chrono::minutes(5);
  std::unique_ptr<detail::NcclWatchdog> watchdog_;  ///< last: stopped before the rest goes
};

/// Communicators for this rank's `devices` in a clique over every device of every rank of
/// `group` (each rank passing the same number of devices): rank 0 makes an `ncclUniqueId`
/// and broadcasts it through the group; device `k` of rank `r` is NCCL rank
/// `r * devices.size() + k`. Called by every rank, from one thread each.
template <ProcessGroup G>
std::vector<NcclComm> make_rank_communicators(G& group, const std::vector<Device>& devices) {
  ncclUniqueId id{};
  if (group.rank() == 0) STOKE_NCCL_CHECK(ncclGetUniqueId(&id));
  dist::broadcast_value(group, id, 0);
  const int local = static_cast<int>(devices.size());
  const int total = static_cast<int>(group.size()) * local;
  std::vector<ncclComm_t> comms(devices.size(), nullptr);
  STOKE_NCCL_CHECK(ncclGroupStart());
  try {
    for (int k = 0; k < local; ++k) {
      const DeviceGuard guard(devices[static_cast<std::size_t>(k)]);
      STOKE_NCCL_CHECK(ncclCommInitRank(&comms[static_cast<std::size_t>(k)], total, id,
                                        static_cast<int>(group.rank()) * local + k));
    }
  } catch (...) {
    // The group must be closed whatever failed, then what it made is freed.
    (void)ncclGroupEnd();
    for (ncclComm_t comm : comms) {
      if (comm != nullptr) (void)ncclCommAbort(comm);
    }
    throw;
  }
  STOKE_NCCL_CHECK(ncclGroupEnd());
  std::vector<NcclComm> out;
  for (ncclComm_t comm : comms) out.emplace_back(comm);
  return out;
}

}  // namespace stoke::cuda

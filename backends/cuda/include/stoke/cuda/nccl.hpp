#pragma once
/// @file
/// NCCL for the CUDA backend (built when `STOKE_ENABLE_NCCL` found NCCL): `STOKE_NCCL_CHECK`,
/// RAII communicators, `NcclCollective` (all_reduce over device buffers, one thread per
/// device) and `make_rank_communicators`, which bootstraps NCCL across the ranks of a
/// `stoke::ProcessGroup` by broadcasting an `ncclUniqueId` through it.

#if !defined(STOKE_CUDA_HAS_NCCL)
#error "stoke::cuda was built without NCCL (STOKE_ENABLE_NCCL is OFF)"
#endif

#include <atomic>
#include <chrono>
#include <cstddef>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <source_location>
#include <span>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <nccl.h>

#include <stoke/core/device.hpp>
#include <stoke/cuda/buffer.hpp>
#include <stoke/cuda/device.hpp>
#include <stoke/cuda/error.hpp>
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

/// Sums float buffers in device memory across CUDA devices with NCCL, one participant thread
/// per device. Models `stoke::Collective`: participant `k` passes a span of device memory on
/// `devices[k]` (such as `Buffer::floats()`); the reduction runs on `k`'s own stream and the
/// call returns once the sum is in place. `abort()` aborts the communicators, which wakes
/// every participant waiting for a peer that will never come.
class NcclCollective {
 public:
  /// A clique over the local `devices` (`ncclCommInitAll`); devices must be distinct.
  explicit NcclCollective(std::vector<Device> devices) : devices_(std::move(devices)) {
    if (devices_.empty()) throw std::invalid_argument("stoke: cuda: a collective needs a device");
    std::vector<int> ordinals;
    for (const Device& device : devices_) ordinals.push_back(device.ordinal);
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
      throw std::invalid_argument("stoke: cuda: a collective needs one communicator per device");
    }
    make_streams();
  }

  /// Number of participants.
  [[nodiscard]] std::size_t size() const noexcept { return devices_.size(); }
  /// Participant `k`'s device.
  [[nodiscard]] const Device& device(std::size_t participant) const {
    return devices_.at(participant);
  }

  /// Replaces every participant's device `values` by the element-wise sum over all of them
  /// (and over every rank, for communicators spanning ranks). While it waits it polls the
  /// stream, the communicator's asynchronous error (a peer that failed) and `abort()`; past
  /// `timeout()` it aborts the collective and throws, naming the participant and its device.
  void all_reduce_sum(std::size_t participant, std::span<float> values) {
    if (participant >= devices_.size()) {
      abort();
      throw std::invalid_argument("stoke: cuda: participant " + std::to_string(participant) +
                                  " of a collective of " + std::to_string(devices_.size()));
    }
    const DeviceGuard guard(devices_[participant]);
    const cudaStream_t stream = streams_[participant].handle();
    try {
      {
        const std::shared_lock lock(comms_mutex_);
        throw_if_aborted();
        STOKE_NCCL_CHECK(ncclAllReduce(values.data(), values.data(), values.size(), ncclFloat,
                                       ncclSum, comms_[participant].get(), stream));
      }
      const auto deadline = std::chrono::steady_clock::now() + timeout_;
      while (!finished(participant, stream)) {
        if (std::chrono::steady_clock::now() > deadline) {
          throw Error("stoke: cuda: the all_reduce of participant " + std::to_string(participant) +
                      " (" + device_name(devices_[participant]) + ") did not finish within " +
                      std::to_string(timeout_.count()) + " ms: a peer is missing or stalled");
        }
        std::this_thread::yield();
      }
    } catch (...) {
      abort();
      throw;
    }
  }
  /// `all_reduce_sum` over a device buffer of floats, after the writes queued on it.
  void all_reduce_sum(std::size_t participant, Buffer& values) {
    {
      const DeviceGuard guard(devices_.at(participant));
      values.written().enqueue_wait(streams_[participant].handle());
    }
    all_reduce_sum(participant, values.floats());
  }

  /// Wakes every waiting participant with an error (aborts the communicators); later calls
  /// fail at once. Participants read a communicator only under a shared lock, so it is never
  /// aborted while one of them is inside an NCCL call on it.
  void abort() {
    if (aborted_.exchange(true)) return;
    const std::unique_lock lock(comms_mutex_);
    for (NcclComm& comm : comms_) comm.abort();
  }

  /// How long a participant waits for its all_reduce before it gives up (default 5 minutes).
  [[nodiscard]] std::chrono::milliseconds timeout() const noexcept { return timeout_; }
  /// Sets that wait (set it before the participants start).
  void set_timeout(std::chrono::milliseconds timeout) noexcept { timeout_ = timeout; }

 private:
  void make_streams() {
    for (const Device& device : devices_) streams_.emplace_back(device);
  }

  void throw_if_aborted() const {
    if (aborted_.load()) throw Error("stoke: cuda: the collective was aborted");
  }

  /// Whether the work on `stream` is done; throws if it failed, if the communicator reports
  /// an asynchronous error, or if the collective was aborted.
  bool finished(std::size_t participant, cudaStream_t stream) {
    const std::shared_lock lock(comms_mutex_);
    throw_if_aborted();
    ncclResult_t async = ncclSuccess;
    STOKE_NCCL_CHECK(ncclCommGetAsyncError(comms_[participant].get(), &async));
    if (async != ncclSuccess && async != ncclInProgress) {
      check(async, "the communicator (ncclCommGetAsyncError)");
    }
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

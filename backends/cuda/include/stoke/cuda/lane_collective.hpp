#pragma once
/// @file
/// `cuda::LaneCollective`: the CUDA backend's collective, hierarchical over lanes. The lanes of
/// one GPU sum on that GPU in a fixed order, NCCL sums among one leader per GPU (never with one
/// GPU), and the result goes back to the lanes; the grouping and the order are
/// `stoke::HierarchicalCollective`'s, the device work is `detail::LaneEngine`'s.

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include <cuda_runtime_api.h>

#include <stoke/core/collective.hpp>
#include <stoke/core/device.hpp>
#include <stoke/core/error.hpp>
#include <stoke/core/hierarchical_collective.hpp>
#include <stoke/core/lane_groups.hpp>
#include <stoke/cuda/buffer.hpp>
#include <stoke/cuda/device.hpp>
#include <stoke/cuda/error.hpp>
#include <stoke/cuda/fence.hpp>
#include <stoke/cuda/lane_sum.hpp>
#include <stoke/cuda/runtime.hpp>
#if defined(STOKE_CUDA_HAS_NCCL)
#include <stoke/cuda/nccl.hpp>
#endif

namespace stoke::cuda {

static_assert(kernels::max_lane_inputs == max_lanes_per_gpu);

namespace detail {

/// The device work of `LaneCollective` (the engine of `stoke::HierarchicalCollective`): each
/// GPU's leader queues its group's sum, copies and NCCL call on a stream of the group's own.
/// On device buffers nothing waits: every member's buffer is marked written by the group's
/// last work. On spans the leader waits for the result before the members return (as
/// `NcclCollective` does on spans); a span of host memory (the learner's epoch exchange) is
/// summed and copied on the host in the same order, and crosses GPUs through a device buffer.
class LaneEngine {
 public:
  /// The engine of `devices` (participant `k` is `devices[k]`) grouped by GPU as `groups`:
  /// a stream per GPU, and NCCL among the leaders where there are several GPUs. Throws
  /// `UsageError` for more than `max_lanes_per_gpu` lanes on a GPU, or several GPUs in a build
  /// without NCCL.
  LaneEngine(const LaneGroups& groups, std::vector<Device> devices) : devices_(std::move(devices)) {
    if (groups.largest_group() > max_lanes_per_gpu) {
      throw UsageError("stoke: cuda: a collective of " + std::to_string(groups.largest_group()) +
                       " lanes on one GPU; at most " + std::to_string(max_lanes_per_gpu) +
                       " are allowed");
    }
    for (std::size_t g = 0; g < groups.groups(); ++g) {
      leaders_.push_back(devices_[groups.leader(g)]);
      streams_.emplace_back(leaders_.back());
    }
    if (leaders_.size() > 1) {
#if defined(STOKE_CUDA_HAS_NCCL)
      across_ = std::make_unique<NcclCollective>(leaders_);
#else
      throw UsageError("stoke: cuda: a collective over " + std::to_string(leaders_.size()) +
                       " GPUs needs NCCL, and stoke::cuda was built without it "
                       "(STOKE_ENABLE_NCCL is OFF)");
#endif
    }
  }

  /// Throws `UsageError` unless `values` is empty or on participant `k`'s device.
  void check(std::size_t k, const Buffer& values) const {
    if (values.data() != nullptr && !(values.device() == devices_[k])) {
      throw UsageError("stoke: cuda: participant " + std::to_string(k) + " is on " +
                       device_name(devices_[k]) + " but passed a buffer on " +
                       device_name(values.device()));
    }
  }
  /// Spans of device memory carry no device: nothing to check.
  void check(std::size_t, const std::span<float>&) const noexcept {}

  /// The floats of `values`.
  [[nodiscard]] static std::size_t floats(const Buffer& values) noexcept {
    return values.floats().size();
  }
  /// The floats of `values`.
  [[nodiscard]] static std::size_t floats(const std::span<float>& values) noexcept {
    return values.size();
  }

  /// Orders the group's work after every member buffer's last write and uses.
  void begin(std::size_t g, std::span<Buffer* const> members) const {
    const DeviceGuard guard(leaders_[g]);
    for (Buffer* member : members) member->enqueue_wait_for_uses(stream(g));
  }
  /// Spans carry no fences: their writers have finished (see the class comment).
  void begin(std::size_t, std::span<std::span<float>* const>) const noexcept {}

  /// Queues `*members[0] = ((m0 + m1) + m2) + ...` on the group's stream (sums it on the host
  /// for spans of host memory).
  template <class Values>
  void sum_in_order(std::size_t g, std::span<Values* const> members) const {
    if (on_host(*members[0])) {
      const std::size_t length = floats(*members[0]);
      for (std::size_t j = 0; j < length; ++j) {
        float sum = data(*members[0])[j];
        for (std::size_t i = 1; i < members.size(); ++i) sum += data(*members[i])[j];
        data(*members[0])[j] = sum;
      }
      return;
    }
    const DeviceGuard guard(leaders_[g]);
    kernels::LaneInputs in{};
    in.count = static_cast<unsigned>(members.size());
    for (std::size_t i = 0; i < members.size(); ++i) in.at[i] = data(*members[i]);
    STOKE_CUDA_CHECK(
        kernels::sum_lanes_in_order(data(*members[0]), in, floats(*members[0]), stream(g)));
  }

  /// Queues the copy of the floats of `range` of `from` into `to`.
  template <class Values>
  void copy(std::size_t g, const Values& from, Values& to, ParameterShard range) const {
    if (on_host(from)) {
      std::copy_n(data(from) + range.begin, range.size(), data(to) + range.begin);
      return;
    }
    const DeviceGuard guard(leaders_[g]);
    STOKE_CUDA_CHECK(cudaMemcpyAsync(data(to) + range.begin, data(from) + range.begin,
                                     range.size() * sizeof(float), cudaMemcpyDeviceToDevice,
                                     stream(g)));
  }

  /// Queues the zeroing of the floats of `range` of `values`.
  template <class Values>
  void zero(std::size_t g, Values& values, ParameterShard range) const {
    if (on_host(values)) {
      std::fill_n(data(values) + range.begin, range.size(), 0.0f);
      return;
    }
    const DeviceGuard guard(leaders_[g]);
    STOKE_CUDA_CHECK(
        cudaMemsetAsync(data(values) + range.begin, 0, range.size() * sizeof(float), stream(g)));
  }

  /// Sums the leader's buffer across the GPUs with NCCL, after the group's work so far; the
  /// group's later work waits for it.
  void across_groups(std::size_t g, Buffer& values) {
#if defined(STOKE_CUDA_HAS_NCCL)
    const DeviceGuard guard(leaders_[g]);
    values.mark_written(Fence(leaders_[g], stream(g)));
    across_->all_reduce_sum(g, values);
    values.written().enqueue_wait(stream(g));
#else
    (void)g;
    (void)values;
#endif
  }
  /// Sums the leader's span across the GPUs with NCCL, once the group's work so far is done;
  /// host memory goes through a device buffer there and back.
  void across_groups(std::size_t g, std::span<float>& values) {
#if defined(STOKE_CUDA_HAS_NCCL)
    const DeviceGuard guard(leaders_[g]);
    STOKE_CUDA_CHECK(cudaStreamSynchronize(stream(g)));
    if (!on_host(values)) {
      across_->all_reduce_sum(g, values);
      return;
    }
    const std::size_t bytes = values.size_bytes();
    const Buffer staged(leaders_[g], bytes);
    staged.written().wait();
    STOKE_CUDA_CHECK(cudaMemcpy(staged.data(), values.data(), bytes, cudaMemcpyHostToDevice));
    across_->all_reduce_sum(g, staged.floats());
    STOKE_CUDA_CHECK(cudaMemcpy(values.data(), staged.data(), bytes, cudaMemcpyDeviceToHost));
#else
    (void)g;
    (void)values;
#endif
  }

  /// Marks every member buffer written by the group's work.
  void end(std::size_t g, std::span<Buffer* const> members) const {
    const DeviceGuard guard(leaders_[g]);
    const Fence done(leaders_[g], stream(g));
    for (Buffer* member : members) member->mark_written(done);
  }
  /// Waits for the group's work: the members' spans hold the result when they return.
  void end(std::size_t g, std::span<std::span<float>* const>) const {
    const DeviceGuard guard(leaders_[g]);
    STOKE_CUDA_CHECK(cudaStreamSynchronize(stream(g)));
  }

  /// Aborts NCCL among the leaders, waking a leader waiting for another GPU.
  void abort() {
#if defined(STOKE_CUDA_HAS_NCCL)
    if (across_) across_->abort();
#endif
  }

  /// Participant `k`'s device.
  [[nodiscard]] const Device& device(std::size_t k) const { return devices_.at(k); }

  /// How long a leader waits for the other GPUs (with several).
  [[nodiscard]] std::chrono::milliseconds timeout() const noexcept {
#if defined(STOKE_CUDA_HAS_NCCL)
    if (across_) return across_->timeout();
#endif
    return timeout_;
  }
  /// Sets that wait (set it before the participants start).
  void set_timeout(std::chrono::milliseconds timeout) noexcept {
    timeout_ = timeout;
#if defined(STOKE_CUDA_HAS_NCCL)
    if (across_) across_->set_timeout(timeout);
#endif
  }

 private:
  /// Device buffers are in device memory.
  [[nodiscard]] static bool on_host(const Buffer&) noexcept { return false; }
  /// Whether `values` lie in host memory (pageable or pinned), as the runtime tells.
  [[nodiscard]] static bool on_host(const std::span<float>& values) {
    if (values.empty()) return false;
    cudaPointerAttributes attributes{};
    if (cudaPointerGetAttributes(&attributes, values.data()) != cudaSuccess) {
      (void)cudaGetLastError();  // memory the runtime does not know: the host's
      return true;
    }
    return attributes.type != cudaMemoryTypeDevice && attributes.type != cudaMemoryTypeManaged;
  }

  [[nodiscard]] cudaStream_t stream(std::size_t g) const noexcept { return streams_[g].handle(); }
  [[nodiscard]] static float* data(const Buffer& values) noexcept { return values.floats().data(); }
  [[nodiscard]] static float* data(const std::span<float>& values) noexcept {
    return values.data();
  }

  std::vector<Device> devices_;
  std::vector<Device> leaders_;  ///< group `g`'s leader's device
  std::vector<Stream> streams_;  ///< group `g`'s stream, on its GPU
  std::chrono::milliseconds timeout_ = std::chrono::minutes(5);
#if defined(STOKE_CUDA_HAS_NCCL)
  std::unique_ptr<NcclCollective> across_;  ///< among the leaders, with several GPUs
#endif
};

}  // namespace detail

/// Sums (and all-gathers) float buffers in device memory across the CUDA devices of one
/// process, lanes included, one participant thread per device. Models `stoke::Collective`:
/// participant `k` passes a `Buffer` on `devices[k]` (the call returns at once, the buffer
/// marked written by the collective's work, so later work is ordered by fences) or a span of
/// device memory there (the call returns with the result in place). The lanes of one GPU sum
/// on it in participant order, left to right: the order of `stoke::SharedMemoryCollective`,
/// so on one GPU the result has the host's bits. NCCL sums among one leader per GPU (none
/// with one GPU); see `stoke::HierarchicalCollective`.
class LaneCollective : public HierarchicalCollective<detail::LaneEngine> {
 public:
  /// A collective over `devices` (participant `k` is `devices[k]`); throws `UsageError` as
  /// `detail::LaneEngine` does.
  explicit LaneCollective(const std::vector<Device>& devices)
      : LaneCollective(by_gpu(devices), devices) {}

  /// Participant `k`'s device; throws unless `k` is one of this collective's.
  [[nodiscard]] const Device& device(std::size_t k) { return engine().device(k); }
  /// How long a leader waits for the other GPUs before it gives up (default 5 minutes).
  [[nodiscard]] std::chrono::milliseconds timeout() { return engine().timeout(); }
  /// Sets that wait (set it before the participants start).
  void set_timeout(std::chrono::milliseconds timeout) { engine().set_timeout(timeout); }

 private:
  LaneCollective(const LaneGroups& groups, const std::vector<Device>& devices)
      : HierarchicalCollective(groups, detail::LaneEngine(groups, devices)) {}

  [[nodiscard]] static LaneGroups by_gpu(const std::vector<Device>& devices) {
    return LaneGroups::of(devices, [](const Device& device) { return device.ordinal; });
  }
};

static_assert(stoke::Collective<LaneCollective>);

}  // namespace stoke::cuda

#pragma once
/// @file
/// `vulkan::HostStagedCollective`: all_reduce and all_gather between Vulkan devices of one
/// process, staged through host memory (download, combine on the host in a fixed order, upload).

#include <cstddef>
#include <cstring>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include <stoke/core/device.hpp>
#include <stoke/core/error.hpp>
#include <stoke/core/shared_memory_collective.hpp>
#include <stoke/vulkan/buffer.hpp>
#include <stoke/vulkan/device.hpp>
#include <stoke/vulkan/registry.hpp>
#include <stoke/vulkan/stager.hpp>

namespace stoke::vulkan {

/// Sums buffers across Vulkan devices, one participant thread per device. Models
/// `stoke::Collective`. A device buffer is downloaded, summed on the host by the CPU
/// backend's shared-memory collective (participant 0, 1, ... in that order, so results are
/// deterministic), and uploaded back in place. Host buffers are summed directly.
class HostStagedCollective {
 public:
  /// A collective over `devices`: participant `k` is `devices[k]`.
  explicit HostStagedCollective(std::vector<Device> devices)
      : devices_(std::move(devices)), host_(devices_.size()) {
    stagers_.reserve(devices_.size());
    for (const Device& device : devices_) {
      stagers_.push_back(std::make_unique<Stager>(context(device), 1));
    }
  }

  /// Number of participants.
  [[nodiscard]] std::size_t size() const noexcept { return devices_.size(); }

  /// Replaces every participant's host `values` by the element-wise sum over all of them.
  void all_reduce_sum(std::size_t participant, std::span<float> values) {
    host_.all_reduce_sum(participant, values);
  }

  /// See `stoke::all_gather`: every participant's host `values` gets every participant's
  /// shard.
  void all_gather(std::size_t participant, std::span<float> values) {
    host_.all_gather(participant, values);
  }

  /// Replaces every participant's device buffer of floats (on its own device) by the
  /// element-wise sum over all of them; returns when the sum is in `values`.
  void all_reduce_sum(std::size_t participant, Buffer& values) {
    staged(participant, values,
           [&](std::span<float> host) { host_.all_reduce_sum(participant, host); });
  }

  /// See `stoke::all_gather`, on every participant's device buffer of floats.
  void all_gather(std::size_t participant, Buffer& values) {
    staged(participant, values,
           [&](std::span<float> host) { host_.all_gather(participant, host); });
  }

  /// Wakes every waiting participant with an error; later calls fail at once.
  void abort() { host_.abort(); }

 private:
  /// Downloads participant `participant`'s `values`, runs the host collective `exchange` on
  /// them and uploads the result in place (returning once it is there). A bad argument or a
  /// failed download aborts the collective, so the other participants do not wait forever.
  template <class Exchange>
  void staged(std::size_t participant, Buffer& values, Exchange&& exchange) {
    std::vector<float> host;
    try {
      if (participant >= devices_.size()) {
        throw UsageError("stoke: vulkan: participant " + std::to_string(participant) +
                         " of a collective of " + std::to_string(devices_.size()));
      }
      if (!(values.device() == devices_[participant])) {
        throw UsageError("stoke: vulkan: participant " + std::to_string(participant) + " is " +
                         device_name(devices_[participant]) + " but passed a buffer on " +
                         device_name(values.device()));
      }
      if (values.size() % sizeof(float) != 0) {
        throw UsageError("stoke: vulkan: a collective needs a buffer of floats, got " +
                         std::to_string(values.size()) + " bytes");
      }
      const std::vector<std::byte> bytes = stagers_[participant]->download(values);
      host.resize(values.size() / sizeof(float));
      if (!bytes.empty()) std::memcpy(host.data(), bytes.data(), bytes.size());
    } catch (...) {
      host_.abort();
      throw;
    }
    exchange(std::span<float>(host));
    stagers_[participant]->upload_into(values, std::as_bytes(std::span(host))).wait();
  }

  std::vector<Device> devices_;
  std::vector<std::unique_ptr<Stager>> stagers_;
  SharedMemoryCollective host_;
};

}  // namespace stoke::vulkan

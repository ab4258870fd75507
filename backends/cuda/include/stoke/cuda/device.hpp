#pragma once
/// @file
/// `cuda::Device`: one stoke device on a CUDA GPU, by the GPU's ordinal and a lane on it
/// (`cuda:0`, `cuda:1`, `cuda:0.1`, ...), and `lanes_over`, how a count of devices is laid over
/// the GPUs.

#include <cstddef>
#include <functional>
#include <ostream>
#include <string>
#include <vector>

#include <stoke/core/error.hpp>

namespace stoke::cuda {

/// A stoke device on a CUDA GPU: the GPU by its ordinal among the visible ones
/// (`CUDA_VISIBLE_DEVICES`), and a lane on it. Lanes are several stoke devices on one GPU,
/// each with streams of its own (its own `DeviceContext`), so that N-device code runs on fewer
/// GPUs; lane 0 is the GPU itself.
struct Device {
  int ordinal = 0;  ///< what `cudaSetDevice` takes
  int lane = 0;     ///< which stoke device on that GPU

  friend bool operator==(const Device&, const Device&) = default;
  /// Prints `cuda:<ordinal>` for lane 0, else `cuda:<ordinal>.<lane>`.
  friend std::ostream& operator<<(std::ostream& out, const Device& device) {
    out << "cuda:" << device.ordinal;
    if (device.lane != 0) out << '.' << device.lane;
    return out;
  }
};

/// The most lanes `lanes_over` puts on one GPU: each is a whole replica of the model with
/// streams of its own, meant for running N-device code on fewer GPUs, not for hundreds.
inline constexpr std::size_t max_lanes_per_gpu = 8;

/// The `count` stoke devices that `gpus` visible GPUs give, round-robin over the GPUs as
/// `vulkan::Backend::devices(count)` lays its devices over physical ones: device `k` is
/// lane `k / gpus` of GPU `k % gpus` (so `count <= gpus` gives lane 0 of the first `count`
/// GPUs, and 3 on 2 GPUs give `cuda:0`, `cuda:1`, `cuda:0.1`). Pure: no CUDA call. Throws
/// `UsageError` when they cannot be given: `count > 0` with no GPU, or more than
/// `max_lanes_per_gpu` lanes on a GPU.
[[nodiscard]] inline std::vector<Device> lanes_over(std::size_t gpus, std::size_t count) {
  if (count == 0) return {};
  if (gpus == 0) {
    throw UsageError("cuda: " + std::to_string(count) +
                     " devices asked for, but no CUDA GPU is visible");
  }
  const std::size_t lanes = (count + gpus - 1) / gpus;
  if (lanes > max_lanes_per_gpu) {
    throw UsageError("cuda: " + std::to_string(count) + " devices asked for on " +
                     std::to_string(gpus) + " GPU" + (gpus == 1 ? "" : "s") + " would put " +
                     std::to_string(lanes) + " lanes on a GPU; at most " +
                     std::to_string(max_lanes_per_gpu) + " are allowed");
  }
  std::vector<Device> out(count);
  for (std::size_t k = 0; k < count; ++k) {
    out[k] = {.ordinal = static_cast<int>(k % gpus), .lane = static_cast<int>(k / gpus)};
  }
  return out;
}

}  // namespace stoke::cuda

/// Hashes a CUDA device by its ordinal and lane.
template <>
struct std::hash<stoke::cuda::Device> {
  std::size_t operator()(const stoke::cuda::Device& device) const noexcept {
    const std::size_t ordinal = std::hash<int>{}(device.ordinal);
    return ordinal ^
           (std::hash<int>{}(device.lane) + static_cast<std::size_t>(0x9E3779B97F4A7C15ULL) +
            (ordinal << 6) + (ordinal >> 2));
  }
};

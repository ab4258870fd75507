#pragma once
/// @file
/// `cpu::Backend`: the CPU backend, whose devices are logical.

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <stoke/core/env.hpp>
#include <stoke/core/shared_memory_collective.hpp>
#include <stoke/cpu/device.hpp>

namespace stoke::cpu {

/// The CPU backend. Its devices are logical; how many are visible is set by the
/// environment variable `STOKE_CPU_DEVICES` (default: the number of hardware threads); a
/// value that is not a count is an `InputError`.
struct Backend {
  using Device = cpu::Device;                 ///< `cpu:N`
  using Collective = SharedMemoryCollective;  ///< all_reduce through shared memory
  /// Batches already live where CPU devices compute: device prefetch passes them through.
  static constexpr bool host_memory = true;

  /// `"cpu"`.
  static constexpr std::string_view name() noexcept { return "cpu"; }

  /// The visible devices `cpu:0 .. cpu:N-1`.
  static std::vector<Device> devices() {
    std::size_t count = std::thread::hardware_concurrency();
    if (const auto env = stoke::env_count("STOKE_CPU_DEVICES")) count = *env;
    return devices(count == 0 ? 1 : count);
  }

  /// The first `count` devices.
  static std::vector<Device> devices(std::size_t count) {
    std::vector<Device> out(count);
    for (std::size_t i = 0; i < count; ++i) out[i].index = i;
    return out;
  }

  /// A shared-memory all_reduce among `devices` (one thread each).
  static std::unique_ptr<Collective> make_collective(const std::vector<Device>& devices) {
    return std::make_unique<Collective>(devices.size());
  }
};

}  // namespace stoke::cpu

#pragma once
/// @file
/// What the conformance suite needs of each backend (`ConformanceTraits<B>`), and the host
/// batches it prefetches: rows of floats made for any backend's device.

#include <atomic>
#include <cstddef>
#include <cstring>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include <stoke/data/prefetch.hpp>
#include <stoke/stoke.hpp>

namespace stoke::testing {

/// Per-backend hooks of the conformance suite. Every backend in `ConformanceBackends`
/// specialises it with:
///   static std::vector<device_t<B>> devices(std::size_t count);  // `count` test devices
///   static std::string skip_reason();     // why the suite cannot run here, or empty
///   static void set_up(); static void tear_down();  // around every test
///   static bool uploaded(const Data& data);  // the device copy of a prefetched batch is done
/// and optionally `static void fail_copy(std::size_t n)` when it can make copy `n` of the
/// next stager fail on the device.
template <class B>
struct ConformanceTraits;

/// Host rows for a device: the batch a loader makes before it is prefetched.
template <class Device>
struct HostRows {
  std::vector<float> rows;        ///< `width` floats per item
  Device device{};                ///< the device the batch was made for
  const float* origin = nullptr;  ///< where the batcher put `rows` (to tell copies apart)
  /// What is uploaded.
  [[nodiscard]] std::span<const float> values() const { return rows; }
};

/// Item `x` becomes the row `10x, 10x + 1, ..., 10x + width - 1`; counts the batches it
/// made and fails on `fail_on` when set.
struct RowsBatcher {
  std::size_t width = 3;
  std::shared_ptr<std::atomic<std::size_t>> made = std::make_shared<std::atomic<std::size_t>>(0);
  std::size_t fail_on = static_cast<std::size_t>(-1);

  template <class Device>
  HostRows<Device> batch(std::vector<std::size_t> items, const Device& device) const {
    made->fetch_add(1);
    HostRows<Device> out;
    out.device = device;
    out.rows.reserve(items.size() * width);
    for (const std::size_t item : items) {
      if (item == fail_on)
        throw std::runtime_error("the batcher failed on item " + std::to_string(item));
      for (std::size_t k = 0; k < width; ++k) out.rows.push_back(static_cast<float>(10 * item + k));
    }
    out.origin = out.rows.data();
    return out;
  }
};

/// The rows `RowsBatcher` makes for `indices`.
inline std::vector<float> expected_rows(const std::vector<std::size_t>& indices,
                                        std::size_t width = 3) {
  std::vector<float> rows;
  for (const std::size_t item : indices) {
    for (std::size_t k = 0; k < width; ++k) rows.push_back(static_cast<float>(10 * item + k));
  }
  return rows;
}

/// The floats of a prefetched batch's data, read back to the host.
template <class B, class Data>
std::vector<float> read_floats(const Data& data) {
  if constexpr (is_host_memory_backend<B>) {
    return {data.values().begin(), data.values().end()};
  } else {
    const auto bytes = B::make_stager(data.device(), 1)->download(data);
    std::vector<float> values(bytes.size() / sizeof(float));
    if (!bytes.empty()) std::memcpy(values.data(), bytes.data(), bytes.size());
    return values;
  }
}

/// The device a prefetched batch's data lives on.
template <class B, class Data>
device_t<B> device_of(const Data& data) {
  if constexpr (is_host_memory_backend<B>) {
    return data.device;
  } else {
    return data.device();
  }
}

/// Names the typed tests by backend (`<cpu>`, `<vulkan>`, `<cuda>`).
struct BackendNames {
  /// `B::name()`.
  template <class B>
  static std::string GetName(int) {
    return std::string(B::name());
  }
};

}  // namespace stoke::testing

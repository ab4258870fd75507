#pragma once
/// @file
/// What the conformance suite needs of each backend (`ConformanceTraits<B>`), and the host
/// batches it prefetches: rows of floats made for any backend's device.

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <mutex>
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

/// Counts the batches a batcher started; the test waits on the count instead of sleeping.
class MadeCounter {
 public:
  /// Counts one more batch.
  void add() {
    {
      const std::lock_guard lock(mutex_);
      ++count_;
    }
    changed_.notify_all();
  }
  /// Batches started so far.
  [[nodiscard]] std::size_t load() const {
    const std::lock_guard lock(mutex_);
    return count_;
  }
  /// Waits until at least `count` batches were started, at most `timeout`; whether they were.
  bool wait_for_at_least(std::size_t count, std::chrono::milliseconds timeout) const {
    std::unique_lock lock(mutex_);
    return changed_.wait_for(lock, timeout, [&] { return count_ >= count; });
  }

 private:
  mutable std::mutex mutex_;
  mutable std::condition_variable changed_;
  std::size_t count_ = 0;
};

/// Item `x` becomes the row `10x, 10x + 1, ..., 10x + width - 1`; counts the batches it
/// made and fails on `fail_on` when set.
struct RowsBatcher {
  std::size_t width = 3;
  std::shared_ptr<MadeCounter> made = std::make_shared<MadeCounter>();
  std::size_t fail_on = static_cast<std::size_t>(-1);

  template <class Device>
  HostRows<Device> batch(std::vector<std::size_t> items, const Device& device) const {
    made->add();
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

/// Host rows written into storage from a buffer pool, which `prefetch_to_device` lends the
/// backend's staging memory: the batch a loader makes when no host copy may follow.
template <class Device>
struct PooledRows {
  cpu::HostBuffer storage;        ///< `count` floats
  std::size_t count = 0;          ///< floats in the batch
  Device device{};                ///< the device the batch was made for
  const float* origin = nullptr;  ///< where the batcher wrote the rows
  /// What is uploaded.
  [[nodiscard]] std::span<const float> values() const {
    return {reinterpret_cast<const float*>(storage.data()), count};
  }
};

/// `RowsBatcher`'s rows, written into storage from `pool`.
struct PooledRowsBatcher {
  std::size_t width = 3;
  cpu::BufferPool pool{16};  ///< shared by the copies on the loader's workers

  template <class Device>
  PooledRows<Device> batch(std::vector<std::size_t> items, const Device& device) const {
    PooledRows<Device> out{pool.acquire(items.size() * width * sizeof(float)), items.size() * width,
                           device, nullptr};
    auto* rows = reinterpret_cast<float*>(out.storage.data());
    for (std::size_t i = 0; i < items.size(); ++i) {
      for (std::size_t k = 0; k < width; ++k) {
        rows[i * width + k] = static_cast<float>(10 * items[i] + k);
      }
    }
    out.origin = rows;
    return out;
  }
};

/// `RowsBatcher`'s rows with a label a row (`index % 7`), as a `cpu::ClassificationBatch`
/// whose inputs come from `pool`: the labelled host batch that `UploadClassification` stages.
struct LabeledRowsBatcher {
  std::size_t width = 3;
  cpu::BufferPool pool{16};  ///< shared by the copies on the loader's workers

  template <class Device>
  cpu::ClassificationBatch batch(std::vector<std::size_t> items, const Device&) const {
    cpu::ClassificationBatch out{cpu::Tensor<float>::uninitialized({items.size(), width}, {}, pool),
                                 {}};
    for (std::size_t i = 0; i < items.size(); ++i) {
      for (std::size_t k = 0; k < width; ++k) {
        out.inputs.row(i)[k] = static_cast<float>(10 * items[i] + k);
      }
      out.labels.push_back(static_cast<std::int32_t>(items[i] % 7));
    }
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

/// The int32 values of a device buffer of backend `B`, read back to the host.
template <class B>
std::vector<std::int32_t> read_ints(const typename B::Buffer& buffer) {
  const auto bytes = B::make_stager(buffer.device(), 1)->download(buffer);
  std::vector<std::int32_t> values(bytes.size() / sizeof(std::int32_t));
  if (!bytes.empty()) std::memcpy(values.data(), bytes.data(), bytes.size());
  return values;
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

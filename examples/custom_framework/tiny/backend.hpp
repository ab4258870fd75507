#pragma once
/// @file
/// `tiny`: a small framework of its own, written without stoke: its device, its tensor, its
/// collective (an all_reduce of its own) and its backend. Nothing here includes or inherits
/// from stoke; the types satisfy stoke's concepts by having the members they name
/// (`Device`, `Backend`, `Collective`, `CollectiveBackend`), which main.cpp checks.

#include <algorithm>
#include <condition_variable>
#include <cstddef>
#include <functional>
#include <memory>
#include <mutex>
#include <ostream>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace tiny {

// --8<-- [start:device]
/// One of tiny's devices, printed `tiny:<id>`: a regular value, hashable and printable.
struct Device {
  int id = 0;

  friend bool operator==(const Device&, const Device&) = default;
  friend std::ostream& operator<<(std::ostream& out, const Device& device) {
    return out << "tiny:" << device.id;
  }
};
// --8<-- [end:device]

/// A row-major matrix of floats that knows the device it lives on.
class Tensor {
 public:
  Tensor() = default;
  /// A zero-filled `rows x cols` tensor on `device`.
  Tensor(std::size_t rows, std::size_t cols, Device device)
      : rows_(rows), cols_(cols), values_(rows * cols), device_(device) {}

  [[nodiscard]] std::size_t rows() const noexcept { return rows_; }
  [[nodiscard]] std::size_t cols() const noexcept { return cols_; }
  [[nodiscard]] const Device& device() const noexcept { return device_; }
  [[nodiscard]] float& operator()(std::size_t row, std::size_t col) {
    return values_[row * cols_ + col];
  }
  [[nodiscard]] float operator()(std::size_t row, std::size_t col) const {
    return values_[row * cols_ + col];
  }

 private:
  std::size_t rows_ = 0;
  std::size_t cols_ = 0;
  std::vector<float> values_;
  Device device_;
};

// --8<-- [start:collective]
/// tiny's all_reduce between its devices, one thread each: every participant publishes its
/// buffer, participant 0 sums them in participant order (so every run gives the same floats)
/// into a shared result, and every participant copies the result back.
class Collective {
 public:
  explicit Collective(std::size_t participants)
      : buffers_(participants), participants_(participants) {}

  [[nodiscard]] std::size_t size() const noexcept { return participants_; }

  /// Every participant's `values` becomes the element-wise sum over all participants.
  void all_reduce_sum(std::size_t participant, std::span<float> values) {
    buffers_.at(participant) = values;
    wait_for_all();
    if (participant == 0) {
      sum_.assign(values.size(), 0.0f);
      for (const std::span<float> buffer : buffers_) {
        if (buffer.size() != sum_.size()) throw std::length_error("tiny: buffers differ in size");
        for (std::size_t i = 0; i < sum_.size(); ++i) sum_[i] += buffer[i];
      }
    }
    wait_for_all();
    std::copy(sum_.begin(), sum_.end(), values.begin());
    wait_for_all();  // nobody still reads sum_ when the next call resizes it
  }

  /// Wakes every waiting participant with an error (a failure on one device must not leave
  /// the others blocked).
  void abort() {
    const std::lock_guard lock(mutex_);
    aborted_ = true;
    changed_.notify_all();
  }

 private:
  void wait_for_all() {
    std::unique_lock lock(mutex_);
    const std::size_t round = round_;
    if (++arrived_ == participants_) {
      arrived_ = 0;
      ++round_;
      changed_.notify_all();
    } else {
      changed_.wait(lock, [&] { return round_ != round || aborted_; });
    }
    if (aborted_) throw std::runtime_error("tiny: all_reduce aborted by another device");
  }

  std::vector<std::span<float>> buffers_;
  std::vector<float> sum_;
  std::size_t participants_;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::size_t arrived_ = 0;
  std::size_t round_ = 0;
  bool aborted_ = false;
};
// --8<-- [end:collective]

// --8<-- [start:backend]
/// tiny's backend: its device type, the devices it sees, its name, and its collective.
struct Backend {
  using Device = tiny::Device;
  using Collective = tiny::Collective;

  static std::string_view name() { return "tiny"; }
  static std::vector<Device> devices() { return {Device{0}, Device{1}}; }
  static std::unique_ptr<Collective> make_collective(const std::vector<Device>& devices) {
    return std::make_unique<Collective>(devices.size());
  }
};
// --8<-- [end:backend]

}  // namespace tiny

/// Hashes a tiny device by its id (stoke keys per-device state by device).
template <>
struct std::hash<tiny::Device> {
  std::size_t operator()(const tiny::Device& device) const noexcept {
    return std::hash<int>{}(device.id);
  }
};

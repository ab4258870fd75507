#pragma once
/// @file
/// `HostTensor<T>`: a contiguous tensor in host memory, the CPU backend's tensor
/// (`cpu::Tensor<T>`; `<stoke/cpu/eigen.hpp>` views it as an Eigen matrix without a copy).

#include <cstddef>
#include <cstring>
#include <functional>
#include <memory>
#include <numeric>
#include <span>
#include <type_traits>
#include <utility>
#include <vector>

#include <stoke/core/buffer_pool.hpp>
#include <stoke/core/host_device.hpp>

namespace stoke {

/// A dense row-major tensor in host memory, tagged with the host device it belongs to.
///
/// Its storage is a `HostBuffer`: copies are deep, moves take the storage. A tensor made by
/// `uninitialized(shape, device, pool)` gives its storage back to `pool` when destroyed.
template <class T>
class HostTensor {
  static_assert(std::is_trivially_copyable_v<T> && std::is_trivially_destructible_v<T>,
                "stoke: HostTensor holds trivially copyable elements (numbers)");

 public:
  HostTensor() = default;
  /// A zero-filled tensor of `shape` on `device`.
  explicit HostTensor(std::vector<std::size_t> shape, HostDevice device = {})
      : HostTensor(std::move(shape), device, nullptr) {
    std::uninitialized_value_construct_n(data_, size_);
  }

  /// A tensor of `shape` on `device` whose elements are left uninitialised, for a caller
  /// that writes every one (a batcher). Its storage comes from `pool` and goes back to it
  /// when the tensor is destroyed (it is freed instead if the pool is gone by then).
  [[nodiscard]] static HostTensor uninitialized(std::vector<std::size_t> shape, HostDevice device,
                                                const BufferPool& pool) {
    HostTensor out(std::move(shape), device, &pool);
    std::uninitialized_default_construct_n(out.data_, out.size_);
    return out;
  }

  /// A deep copy, in storage of its own.
  HostTensor(const HostTensor& other) : HostTensor(other.shape_, other.device_, nullptr) {
    if (size_ != 0) std::memcpy(data_, other.data_, size_ * sizeof(T));
  }
  /// Becomes a deep copy of `other`.
  HostTensor& operator=(const HostTensor& other) {
    if (this != &other) *this = HostTensor(other);
    return *this;
  }
  /// Takes the storage of `other`, which is left empty.
  HostTensor(HostTensor&& other) noexcept
      : shape_(std::exchange(other.shape_, {})),
        size_(std::exchange(other.size_, 0)),
        buffer_(std::move(other.buffer_)),
        data_(std::exchange(other.data_, nullptr)),
        device_(other.device_) {}
  /// Releases this tensor's storage, then takes that of `other`, which is left empty.
  HostTensor& operator=(HostTensor&& other) noexcept {
    if (this != &other) {
      shape_ = std::exchange(other.shape_, {});
      size_ = std::exchange(other.size_, 0);
      buffer_ = std::move(other.buffer_);
      data_ = std::exchange(other.data_, nullptr);
      device_ = other.device_;
    }
    return *this;
  }
  ~HostTensor() = default;

  /// The extent of every dimension.
  [[nodiscard]] const std::vector<std::size_t>& shape() const noexcept { return shape_; }
  /// Number of elements.
  [[nodiscard]] std::size_t size() const noexcept { return size_; }
  /// Extent of the first dimension (0 for a scalar tensor).
  [[nodiscard]] std::size_t rows() const noexcept { return shape_.empty() ? 0 : shape_[0]; }
  /// Elements per row: the product of all but the first extent.
  [[nodiscard]] std::size_t row_size() const noexcept {
    if (shape_.empty()) return 0;
    return std::accumulate(shape_.begin() + 1, shape_.end(), std::size_t{1}, std::multiplies<>{});
  }
  /// The device this tensor belongs to.
  [[nodiscard]] const HostDevice& device() const noexcept { return device_; }

  /// The elements, row-major.
  [[nodiscard]] std::span<T> values() noexcept { return {data_, size_}; }
  [[nodiscard]] std::span<const T> values() const noexcept { return {data_, size_}; }
  /// Row `row` as a span of `row_size()` elements.
  [[nodiscard]] std::span<T> row(std::size_t row) {
    return values().subspan(row * row_size(), row_size());
  }
  [[nodiscard]] std::span<const T> row(std::size_t row) const {
    return values().subspan(row * row_size(), row_size());
  }

 private:
  static std::size_t element_count(const std::vector<std::size_t>& shape) {
    return std::accumulate(shape.begin(), shape.end(), std::size_t{1}, std::multiplies<>{});
  }

  /// Shape and storage, elements not yet created: from `pool` if given, else fresh.
  HostTensor(std::vector<std::size_t> shape, HostDevice device, const BufferPool* pool)
      : shape_(std::move(shape)), size_(element_count(shape_)), device_(device) {
    const std::size_t bytes = size_ * sizeof(T);
    buffer_ = pool != nullptr ? pool->acquire(bytes) : HostBuffer(bytes);
    data_ = reinterpret_cast<T*>(buffer_.data());
  }

  std::vector<std::size_t> shape_;
  std::size_t size_ = 0;
  HostBuffer buffer_;
  T* data_ = nullptr;
  HostDevice device_;
};

}  // namespace stoke

#pragma once
/// @file
/// `cpu::Tensor<T>`: a contiguous host tensor that maps to Eigen without a copy.

#include <cstddef>
#include <functional>
#include <numeric>
#include <span>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <Eigen/Core>

#include <stoke/cpu/device.hpp>

namespace stoke::cpu {

/// A dense row-major tensor in host memory, tagged with the CPU device it belongs to.
template <class T>
class Tensor {
 public:
  /// Row-major Eigen matrix of `T`.
  using Matrix = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

  Tensor() = default;
  /// A zero-filled tensor of `shape` on `device`.
  explicit Tensor(std::vector<std::size_t> shape, Device device = {})
      : shape_(std::move(shape)), values_(element_count(shape_)), device_(device) {}

  /// The extent of every dimension.
  [[nodiscard]] const std::vector<std::size_t>& shape() const noexcept { return shape_; }
  /// Number of elements.
  [[nodiscard]] std::size_t size() const noexcept { return values_.size(); }
  /// Extent of the first dimension (0 for a scalar tensor).
  [[nodiscard]] std::size_t rows() const noexcept { return shape_.empty() ? 0 : shape_[0]; }
  /// Elements per row: the product of all but the first extent.
  [[nodiscard]] std::size_t row_size() const noexcept {
    return shape_.empty() ? 0 : element_count({shape_.begin() + 1, shape_.end()});
  }
  /// The device this tensor belongs to.
  [[nodiscard]] const Device& device() const noexcept { return device_; }

  /// The elements, row-major.
  [[nodiscard]] std::span<T> values() noexcept { return values_; }
  [[nodiscard]] std::span<const T> values() const noexcept { return values_; }
  /// Row `row` as a span of `row_size()` elements.
  [[nodiscard]] std::span<T> row(std::size_t row) {
    return values().subspan(row * row_size(), row_size());
  }
  [[nodiscard]] std::span<const T> row(std::size_t row) const {
    return values().subspan(row * row_size(), row_size());
  }

  /// The tensor as a `rows() x row_size()` Eigen matrix, sharing its memory (no copy).
  [[nodiscard]] Eigen::Map<Matrix> matrix() {
    return Eigen::Map<Matrix>(values_.data(), static_cast<Eigen::Index>(rows()),
                              static_cast<Eigen::Index>(row_size()));
  }
  [[nodiscard]] Eigen::Map<const Matrix> matrix() const {
    return Eigen::Map<const Matrix>(values_.data(), static_cast<Eigen::Index>(rows()),
                                    static_cast<Eigen::Index>(row_size()));
  }

 private:
  static std::size_t element_count(const std::vector<std::size_t>& shape) {
    return std::accumulate(shape.begin(), shape.end(), std::size_t{1}, std::multiplies<>{});
  }

  std::vector<std::size_t> shape_;
  std::vector<T> values_;
  Device device_;
};

}  // namespace stoke::cpu

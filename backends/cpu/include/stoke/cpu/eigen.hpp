#pragma once
/// @file
/// `cpu::matrix`: a CPU tensor as an Eigen matrix, sharing its memory. The only CPU header
/// that needs Eigen; `<stoke/stoke.hpp>` does not include it, so a loader-only user needs no
/// Eigen.

#include <Eigen/Core>

#include <stoke/cpu/tensor.hpp>

namespace stoke::cpu {

/// Row-major Eigen matrix of `T`.
template <class T>
using EigenMatrix = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

/// `tensor` as a `rows() x row_size()` Eigen matrix, sharing its memory (no copy).
template <class T>
[[nodiscard]] Eigen::Map<EigenMatrix<T>> matrix(Tensor<T>& tensor) {
  return Eigen::Map<EigenMatrix<T>>(tensor.values().data(),
                                    static_cast<Eigen::Index>(tensor.rows()),
                                    static_cast<Eigen::Index>(tensor.row_size()));
}

/// `tensor` as a read-only `rows() x row_size()` Eigen matrix, sharing its memory.
template <class T>
[[nodiscard]] Eigen::Map<const EigenMatrix<T>> matrix(const Tensor<T>& tensor) {
  return Eigen::Map<const EigenMatrix<T>>(tensor.values().data(),
                                          static_cast<Eigen::Index>(tensor.rows()),
                                          static_cast<Eigen::Index>(tensor.row_size()));
}

}  // namespace stoke::cpu

#pragma once
/// @file
/// The softmax classifier's kernels on CUDA (`stoke::SoftmaxClassifier`): the launchers of
/// `src/training.cu`'s softmax kernels queued as every training operation is
/// (`training::detail::enqueue`), as `stoke::SoftmaxKernels<cuda::Buffer>`. The model's own
/// header: `training.hpp`, which every device model shares, knows nothing of it.

#include <cstdint>

#include <cuda_runtime_api.h>

#include <stoke/cuda/buffer.hpp>
#include <stoke/cuda/kernels.hpp>
#include <stoke/cuda/training.hpp>
#include <stoke/learner/kernels/softmax_classifier.hpp>
#include <stoke/learner/kernels/softmax_classifier_checks.hpp>

namespace stoke::cuda::training::detail {

/// The kernels' sizes of a softmax batch (checked by `stoke::detail`), its real rows read on
/// the device from `real_rows` where it is given.
inline kernels::SoftmaxSizes kernel_sizes(const stoke::detail::SoftmaxSizes& sizes,
                                          const Buffer* real_rows) {
  if (real_rows == nullptr) {
    return {sizes.rows, sizes.real_rows, sizes.features, sizes.classes, nullptr};
  }
  stoke::detail::check_real_rows(backend, *real_rows);
  return {sizes.rows, read_on_device, sizes.features, sizes.classes,
          static_cast<const std::uint32_t*>(real_rows->data())};
}

/// The softmax classifier's kernels, each with its real rows from `shape` or read from
/// `real_rows` (see `SoftmaxOverloads`).
struct Softmax {
  /// A softmax forward pass, its real rows from `shape` or read from `real_rows`.
  static void forward(const SoftmaxShape& shape, const Buffer& inputs, const Buffer& labels,
                      const Buffer& parameters, Buffer& dlogits, Buffer& item_stats,
                      const Buffer* real_rows) {
    const kernels::SoftmaxSizes sizes =
        kernel_sizes(stoke::detail::checked_softmax_forward(backend, shape, inputs, labels,
                                                            parameters, dlogits, item_stats),
                     real_rows);
    enqueue("the softmax_forward kernel", {&inputs, &labels, &parameters, real_rows},
            {&dlogits, &item_stats}, [&](cudaStream_t stream) {
              return kernels::softmax_forward(
                  sizes, floats(inputs), static_cast<const std::int32_t*>(labels.data()),
                  floats(parameters), floats(dlogits), floats(item_stats), stream);
            });
  }

  /// A softmax batch's gradient sums, its real rows from `shape` or read from `real_rows`.
  static void gradients(const SoftmaxShape& shape, const Buffer& inputs, const Buffer& dlogits,
                        const Buffer& item_stats, Buffer& reduced, const Buffer* real_rows) {
    const kernels::SoftmaxSizes sizes =
        kernel_sizes(stoke::detail::checked_softmax_gradients(backend, shape, inputs, dlogits,
                                                              item_stats, reduced),
                     real_rows);
    enqueue("the softmax_gradients kernel", {&inputs, &dlogits, &item_stats, real_rows}, {&reduced},
            [&](cudaStream_t stream) {
              return kernels::softmax_gradients(sizes, floats(inputs), floats(dlogits),
                                                floats(item_stats), floats(reduced), stream);
            });
  }

  /// A softmax batch's validation sums, its real rows from `shape` or read from `real_rows`.
  static void add_sums(const SoftmaxShape& shape, const Buffer& item_stats, Buffer& sums,
                       const Buffer* real_rows) {
    const kernels::SoftmaxSizes sizes = kernel_sizes(
        stoke::detail::checked_softmax_sums(backend, shape, item_stats, sums), real_rows);
    enqueue("the add_softmax_sums kernel", {&item_stats, real_rows}, {&sums},
            [&](cudaStream_t stream) {
              return kernels::add_softmax_sums(sizes, floats(item_stats), floats(sums), stream);
            });
  }
};

}  // namespace stoke::cuda::training::detail

namespace stoke {

/// The softmax classifier's kernels on CUDA, on the device's compute stream (see
/// `SoftmaxKernels`).
template <>
struct SoftmaxKernels<cuda::Buffer>
    : SoftmaxOverloads<cuda::training::detail::Softmax, cuda::Buffer> {};

}  // namespace stoke

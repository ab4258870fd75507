#pragma once
/// @file
/// The softmax classifier's shaders on Vulkan (`stoke::SoftmaxClassifier`):
/// `softmax_forward.comp`, `softmax_gradients.comp` and `add_softmax_sums.comp`, dispatched as
/// every training shader is, as `stoke::SoftmaxKernels<vulkan::Buffer>`. The model's own
/// header: `training.hpp`, which every device model shares, knows nothing of it.

#include <cstdint>
#include <memory>

#include <stoke/learner/kernels/softmax_classifier.hpp>
#include <stoke/learner/kernels/softmax_classifier_checks.hpp>
#include <stoke/vulkan/buffer.hpp>
#include <stoke/vulkan/compute_pipeline.hpp>
#include <stoke/vulkan/context.hpp>
#include <stoke/vulkan/device.hpp>
#include <stoke/vulkan/device_kernels.hpp>
#include <stoke/vulkan/shaders/add_softmax_sums.spv.hpp>
#include <stoke/vulkan/shaders/softmax_forward.spv.hpp>
#include <stoke/vulkan/shaders/softmax_gradients.spv.hpp>
#include <stoke/vulkan/training.hpp>

namespace stoke::vulkan {

/// The softmax classifier's shaders on one device, made on first use and kept for the life of
/// the process (`kernels_of`). Thread-safe.
class SoftmaxPipelines {
 public:
  /// The shaders of `device`.
  static SoftmaxPipelines& of(const Device& device) { return kernels_of<SoftmaxPipelines>(device); }

  /// The shaders on `context`'s device (`of` keeps one a device).
  explicit SoftmaxPipelines(const std::shared_ptr<Context>& context)
      : forward(context, shaders::softmax_forward, 6, sizeof(std::uint32_t) * 4, 64),
        gradients(context, shaders::softmax_gradients, 5, sizeof(std::uint32_t) * 4, 64),
        add_sums(context, shaders::add_softmax_sums, 3, sizeof(std::uint32_t) * 4, 1) {}

  ComputePipeline forward;    ///< `softmax_forward.comp`
  ComputePipeline gradients;  ///< `softmax_gradients.comp`
  ComputePipeline add_sums;   ///< `add_softmax_sums.comp`
};

namespace training::detail {

/// `sizes` as pushed: the real rows read on the device where `real_rows` is given.
inline stoke::detail::SoftmaxSizes pushed(stoke::detail::SoftmaxSizes sizes,
                                          const Buffer* real_rows) {
  if (real_rows != nullptr) {
    stoke::detail::check_real_rows(backend, *real_rows);
    sizes.real_rows = read_on_device;
  }
  return sizes;
}

/// The softmax classifier's shaders, each with its real rows pushed or read from
/// `real_rows` (see `SoftmaxOverloads`).
struct Softmax {
  /// The softmax forward pass, its real rows pushed or read from `real_rows`.
  static void forward(const SoftmaxShape& shape, const Buffer& inputs, const Buffer& labels,
                      const Buffer& parameters, Buffer& dlogits, Buffer& item_stats,
                      const Buffer* real_rows) {
    const auto sizes = pushed(stoke::detail::checked_softmax_forward(
                                  backend, shape, inputs, labels, parameters, dlogits, item_stats),
                              real_rows);
    const Binding bindings[] = {
        Binding::read(inputs),      Binding::read(labels),
        Binding::read(parameters),  Binding::write(dlogits),
        Binding::write(item_stats), Binding::read(bound(real_rows, labels))};
    SoftmaxPipelines::of(inputs.device()).forward.dispatch(bindings, sizes, shape.rows);
  }

  /// The softmax gradient sums, their real rows pushed or read from `real_rows`.
  static void gradients(const SoftmaxShape& shape, const Buffer& inputs, const Buffer& dlogits,
                        const Buffer& item_stats, Buffer& reduced, const Buffer* real_rows) {
    const auto sizes = pushed(stoke::detail::checked_softmax_gradients(
                                  backend, shape, inputs, dlogits, item_stats, reduced),
                              real_rows);
    const Binding bindings[] = {Binding::read(inputs), Binding::read(dlogits),
                                Binding::read(item_stats), Binding::write(reduced),
                                Binding::read(bound(real_rows, inputs))};
    SoftmaxPipelines::of(inputs.device())
        .gradients.dispatch(bindings, sizes,
                            shape.features * shape.classes + shape.classes + reduced_tail);
  }

  /// The softmax validation sums, their real rows pushed or read from `real_rows`.
  static void add_sums(const SoftmaxShape& shape, const Buffer& item_stats, Buffer& sums,
                       const Buffer* real_rows) {
    const auto sizes =
        pushed(stoke::detail::checked_softmax_sums(backend, shape, item_stats, sums), real_rows);
    const Binding bindings[] = {Binding::read(item_stats), Binding::write(sums),
                                Binding::read(bound(real_rows, item_stats))};
    SoftmaxPipelines::of(sums.device()).add_sums.dispatch(bindings, sizes, 1);
  }
};

}  // namespace training::detail

}  // namespace stoke::vulkan

namespace stoke {

/// The softmax classifier's shaders on Vulkan, each a submission ordered by the buffers'
/// fences (see `SoftmaxKernels`).
template <>
struct SoftmaxKernels<vulkan::Buffer>
    : SoftmaxOverloads<vulkan::training::detail::Softmax, vulkan::Buffer> {};

}  // namespace stoke

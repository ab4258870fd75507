#pragma once
/// @file
/// Training in Vulkan device memory: float tensors, their uploads and downloads, and the
/// compute shaders of the element-wise optimizers (`sgd_step.comp`, `adam_step.comp`) and of
/// a softmax classifier (`softmax_forward.comp`, `softmax_gradients.comp`,
/// `add_softmax_sums.comp`). `vulkan::Backend` exposes them as a `stoke::DeviceBackend`.

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <mutex>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <vulkan/vulkan_core.h>

#include <stoke/core/device_training.hpp>
#include <stoke/core/device_training_checks.hpp>
#include <stoke/vulkan/buffer.hpp>
#include <stoke/vulkan/compute_pipeline.hpp>
#include <stoke/vulkan/context.hpp>
#include <stoke/vulkan/device.hpp>
#include <stoke/vulkan/registry.hpp>
#include <stoke/vulkan/shaders/adam_step.spv.hpp>
#include <stoke/vulkan/shaders/add_softmax_sums.spv.hpp>
#include <stoke/vulkan/shaders/sgd_step.spv.hpp>
#include <stoke/vulkan/shaders/softmax_forward.spv.hpp>
#include <stoke/vulkan/shaders/softmax_gradients.spv.hpp>
#include <stoke/vulkan/stager.hpp>

namespace stoke::vulkan {

/// The training shaders and the stager of one device, made on first use and kept for the
/// life of the process (like the device's context, see `detail::Registry`). Thread-safe.
class TrainingKernels {
 public:
  /// The kernels of `device`.
  static TrainingKernels& of(const Device& device) {
    std::shared_ptr<Context> made = vulkan::context(device);  // the registry outlives every kernel
    static std::mutex mutex;
    static auto* kernels = new std::unordered_map<Device, std::unique_ptr<TrainingKernels>>();
    std::lock_guard lock(mutex);
    auto& slot = (*kernels)[device];
    if (!slot) slot.reset(new TrainingKernels(std::move(made)));
    return *slot;
  }

  /// The device's context.
  [[nodiscard]] const std::shared_ptr<Context>& context() const noexcept { return context_; }
  /// Uploads and downloads of tensors.
  [[nodiscard]] Stager& stager() noexcept { return stager_; }

  ComputePipeline sgd;                ///< `sgd_step.comp`
  ComputePipeline adam;               ///< `adam_step.comp`
  ComputePipeline softmax_forward;    ///< `softmax_forward.comp`
  ComputePipeline softmax_gradients;  ///< `softmax_gradients.comp`
  ComputePipeline add_softmax_sums;   ///< `add_softmax_sums.comp`

 private:
  explicit TrainingKernels(std::shared_ptr<Context> context)
      : sgd(context, shaders::sgd_step, 4, sizeof(std::uint32_t) * 4 + sizeof(float) * 3, 256),
        adam(context, shaders::adam_step, 5, sizeof(std::uint32_t) * 4 + sizeof(float) * 7, 256),
        softmax_forward(context, shaders::softmax_forward, 5, sizeof(std::uint32_t) * 4, 64),
        softmax_gradients(context, shaders::softmax_gradients, 4, sizeof(std::uint32_t) * 4, 64),
        add_softmax_sums(context, shaders::add_softmax_sums, 2, sizeof(std::uint32_t) * 4, 1),
        context_(std::move(context)),
        stager_(context_, 4) {}

  std::shared_ptr<Context> context_;
  Stager stager_;
};

/// Device-resident training on Vulkan: what `vulkan::Backend` offers as a
/// `stoke::DeviceBackend`. Tensors are `Buffer`s; every operation is a submission ordered by
/// the buffers' fences and returns without waiting, except `download`.
namespace training {

namespace detail {

/// The backend's name in the argument checks' messages.
inline constexpr std::string_view backend = "vulkan";

}  // namespace detail

/// The `stoke::DeviceBackend` operations, as static members: `Backend` derives from this,
/// so they are `Backend::zeros`, `Backend::upload` and so on.
struct Operations {
  /// `floats` zeroed floats on `device`.
  static Buffer zeros(const Device& device, std::size_t floats) {
    TrainingKernels& kernels = TrainingKernels::of(device);
    Buffer tensor(kernels.context(), floats * sizeof(float));
    const VkDeviceSize bytes = (std::max<std::size_t>(tensor.size(), 4) + 3) / 4 * 4;
    const Fence used = tensor.used();
    const Fence fence = kernels.context()->submit(
        [&](VkCommandBuffer commands) { vkCmdFillBuffer(commands, tensor.handle(), 0, bytes, 0); },
        std::span(&used, 1));
    tensor.mark_written(fence);
    return tensor;
  }

  /// Overwrites the start of `tensor` with `bytes` (staged: `bytes` may go once this returns).
  static void upload(Buffer& tensor, std::span<const std::byte> bytes) {
    TrainingKernels::of(tensor.device()).stager().upload_into(tensor, bytes);
  }

  /// The floats of `tensor`, once its writes completed.
  static std::vector<float> download(const Buffer& tensor) {
    return stoke::detail::floats_of(TrainingKernels::of(tensor.device()).stager().download(tensor));
  }

  /// One SGD step on a parameter shard (see `OptimizerStepShape`); `velocity` holds the parameter
  /// shard's state.
  static void sgd_step(const SgdHyperparameters& hyper, const OptimizerStepShape& step,
                       Buffer& parameters, Buffer& velocity, const Buffer& reduced,
                       Buffer& history) {
    const auto sizes = stoke::detail::checked_sgd_step(detail::backend, step, parameters, velocity,
                                                       reduced, history);
    struct {
      stoke::detail::OptimizerStepSizes sizes;
      float learning_rate, momentum, weight_decay;
    } params{sizes, step.learning_rate, hyper.momentum, hyper.weight_decay};
    const Binding bindings[] = {Binding::write(parameters), Binding::write(velocity),
                                Binding::read(reduced), Binding::write(history)};
    TrainingKernels::of(parameters.device())
        .sgd.dispatch(bindings, params, std::max<std::size_t>(step.size, 1));
  }

  /// One Adam step on a parameter shard (see `OptimizerStepShape`); `first` and `second` hold the
  /// parameter shard's moments.
  static void adam_step(const AdamHyperparameters& hyper, const OptimizerStepShape& step,
                        Buffer& parameters, Buffer& first, Buffer& second, const Buffer& reduced,
                        Buffer& history) {
    const auto sizes = stoke::detail::checked_adam_step(detail::backend, step, parameters, first,
                                                        second, reduced, history);
    struct {
      stoke::detail::OptimizerStepSizes sizes;
      float learning_rate;
      stoke::detail::AdamFactors factors;
    } params{sizes, step.learning_rate, stoke::detail::adam_factors(hyper, step.learning_rate)};
    const Binding bindings[] = {Binding::write(parameters), Binding::write(first),
                                Binding::write(second), Binding::read(reduced),
                                Binding::write(history)};
    TrainingKernels::of(parameters.device())
        .adam.dispatch(bindings, params, std::max<std::size_t>(step.size, 1));
  }

  /// A softmax classifier's forward pass over a batch (see `SoftmaxShape`): per-item gradients
  /// of the loss by the logits (`rows x classes`) and per-item loss and correctness (`rows x 2`).
  /// `labels` holds one `int32` a row.
  static void softmax_forward(const SoftmaxShape& shape, const Buffer& inputs, const Buffer& labels,
                              const Buffer& parameters, Buffer& dlogits, Buffer& item_stats) {
    const auto sizes = stoke::detail::checked_softmax_forward(
        detail::backend, shape, inputs, labels, parameters, dlogits, item_stats);
    const Binding bindings[] = {Binding::read(inputs), Binding::read(labels),
                                Binding::read(parameters), Binding::write(dlogits),
                                Binding::write(item_stats)};
    TrainingKernels::of(inputs.device()).softmax_forward.dispatch(bindings, sizes, shape.rows);
  }

  /// A softmax classifier's gradient sums and step sums into the reduced tensor.
  static void softmax_gradients(const SoftmaxShape& shape, const Buffer& inputs,
                                const Buffer& dlogits, const Buffer& item_stats, Buffer& reduced) {
    const auto sizes = stoke::detail::checked_softmax_gradients(detail::backend, shape, inputs,
                                                                dlogits, item_stats, reduced);
    const Binding bindings[] = {Binding::read(inputs), Binding::read(dlogits),
                                Binding::read(item_stats), Binding::write(reduced)};
    TrainingKernels::of(inputs.device())
        .softmax_gradients.dispatch(bindings, sizes,
                                    shape.features * shape.classes + shape.classes + reduced_tail);
  }

  /// Adds a softmax batch's loss sum, real-item count and correct count to `sums` (3 floats).
  static void add_softmax_sums(const SoftmaxShape& shape, const Buffer& item_stats, Buffer& sums) {
    const auto sizes =
        stoke::detail::checked_softmax_sums(detail::backend, shape, item_stats, sums);
    const Binding bindings[] = {Binding::read(item_stats), Binding::write(sums)};
    TrainingKernels::of(sums.device()).add_softmax_sums.dispatch(bindings, sizes, 1);
  }
};

}  // namespace training

}  // namespace stoke::vulkan

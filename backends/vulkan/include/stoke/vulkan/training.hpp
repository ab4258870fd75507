#pragma once
/// @file
/// Training in Vulkan device memory: float tensors, their uploads and downloads, and the
/// compute shaders of the element-wise optimizers (`sgd_step.comp`, `adam_step.comp`, with the
/// step table's counter `advance_step.comp`): what every device model needs. `vulkan::Backend`
/// exposes them as a `stoke::DeviceBackend`. A model's own shaders live with that model
/// (`softmax_classifier.hpp`).

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <vulkan/vulkan_core.h>

#include <stoke/learner/kernels/device_training.hpp>
#include <stoke/learner/kernels/device_training_checks.hpp>
#include <stoke/vulkan/buffer.hpp>
#include <stoke/vulkan/compute_pipeline.hpp>
#include <stoke/vulkan/context.hpp>
#include <stoke/vulkan/device.hpp>
#include <stoke/vulkan/device_kernels.hpp>
#include <stoke/vulkan/shaders/adam_step.spv.hpp>
#include <stoke/vulkan/shaders/advance_step.spv.hpp>
#include <stoke/vulkan/shaders/sgd_step.spv.hpp>
#include <stoke/vulkan/stager.hpp>

namespace stoke::vulkan {

/// The training shaders every device model uses and the stager of one device, made on first
/// use and kept for the life of the process (`kernels_of`). Thread-safe.
class TrainingKernels {
 public:
  /// The kernels of `device`.
  static TrainingKernels& of(const Device& device) { return kernels_of<TrainingKernels>(device); }

  /// The kernels on `context`'s device (`of` keeps one a device).
  explicit TrainingKernels(std::shared_ptr<Context> context)
      : sgd(context, shaders::sgd_step, 5, sizeof(std::uint32_t) * 4 + sizeof(float) * 3, 256),
        adam(context, shaders::adam_step, 6, sizeof(std::uint32_t) * 4 + sizeof(float) * 7, 256),
        advance(context, shaders::advance_step, 1, 0, 1),
        context_(std::move(context)),
        stager_(context_, 4) {}

  /// The device's context.
  [[nodiscard]] const std::shared_ptr<Context>& context() const noexcept { return context_; }
  /// Uploads and downloads of tensors.
  [[nodiscard]] Stager& stager() noexcept { return stager_; }

  ComputePipeline sgd;      ///< `sgd_step.comp`
  ComputePipeline adam;     ///< `adam_step.comp`
  ComputePipeline advance;  ///< `advance_step.comp`

 private:
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

/// What a shader binds where it reads no table or count from the device (`instead`: a
/// buffer the dispatch binds anyway), or `on_device`.
inline const Buffer& bound(const Buffer* on_device, const Buffer& instead) noexcept {
  return on_device != nullptr ? *on_device : instead;
}

/// One SGD step: its scalars from `step`, or, with a `table`, from the step table.
inline void sgd_step(const SgdHyperparameters& hyper, const OptimizerStepShape& step,
                     Buffer& parameters, Buffer& velocity, const Buffer& reduced, Buffer& history,
                     const Buffer* table) {
  auto sizes =
      stoke::detail::checked_sgd_step(backend, step, parameters, velocity, reduced, history);
  if (table != nullptr) {
    stoke::detail::check_step_table(backend, step, *table);
    sizes.history_slot = read_on_device;
  }
  struct {
    stoke::detail::OptimizerStepSizes sizes;
    float learning_rate, momentum, weight_decay;
  } params{sizes, table != nullptr ? 0.0f : step.learning_rate, hyper.momentum, hyper.weight_decay};
  const Binding bindings[] = {Binding::write(parameters), Binding::write(velocity),
                              Binding::read(reduced), Binding::write(history),
                              Binding::read(bound(table, reduced))};
  TrainingKernels::of(parameters.device())
      .sgd.dispatch(bindings, params, std::max<std::size_t>(step.size, 1));
}

/// One Adam step: its scalars from `hyper` and `step`, or, with a `table`, the changing ones
/// (rate, decay, bias corrections) from the step table.
inline void adam_step(const AdamHyperparameters& hyper, const OptimizerStepShape& step,
                      Buffer& parameters, Buffer& first, Buffer& second, const Buffer& reduced,
                      Buffer& history, const Buffer* table) {
  auto sizes =
      stoke::detail::checked_adam_step(backend, step, parameters, first, second, reduced, history);
  stoke::detail::AdamFactors factors = stoke::detail::adam_factors(hyper, step.learning_rate);
  float learning_rate = step.learning_rate;
  if (table != nullptr) {
    stoke::detail::check_step_table(backend, step, *table);
    sizes.history_slot = read_on_device;
    learning_rate = factors.decay = factors.correction1 = factors.root_correction2 = 0.0f;
  }
  struct {
    stoke::detail::OptimizerStepSizes sizes;
    float learning_rate;
    stoke::detail::AdamFactors factors;
  } params{sizes, learning_rate, factors};
  const Binding bindings[] = {Binding::write(parameters), Binding::write(first),
                              Binding::write(second),     Binding::read(reduced),
                              Binding::write(history),    Binding::read(bound(table, reduced))};
  TrainingKernels::of(parameters.device())
      .adam.dispatch(bindings, params, std::max<std::size_t>(step.size, 1));
}

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

  /// Sets every 32-bit word of `tensor` to `word`, after its earlier work; nothing is staged,
  /// so nothing waits (a batch's real-row count, a sum started again).
  static void fill_words(Buffer& tensor, std::uint32_t word) {
    if (tensor.empty()) return;
    const VkDeviceSize bytes = (std::max<std::size_t>(tensor.size(), 4) + 3) / 4 * 4;
    const Fence used = tensor.used();
    const Fence fence = tensor.context()->submit(
        [&](VkCommandBuffer commands) {
          vkCmdFillBuffer(commands, tensor.handle(), 0, bytes, word);
        },
        std::span(&used, 1));
    tensor.mark_written(fence);
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
    detail::sgd_step(hyper, step, parameters, velocity, reduced, history, nullptr);
  }
  /// `sgd_step` reading the rate and the history slot from the step table `table` at its
  /// counter (`step.learning_rate` is not read; `step.history_slot` only checks the sizes).
  static void sgd_step(const SgdHyperparameters& hyper, const OptimizerStepShape& step,
                       Buffer& parameters, Buffer& velocity, const Buffer& reduced, Buffer& history,
                       const Buffer& table) {
    detail::sgd_step(hyper, step, parameters, velocity, reduced, history, &table);
  }

  /// One Adam step on a parameter shard (see `OptimizerStepShape`); `first` and `second` hold the
  /// parameter shard's moments.
  static void adam_step(const AdamHyperparameters& hyper, const OptimizerStepShape& step,
                        Buffer& parameters, Buffer& first, Buffer& second, const Buffer& reduced,
                        Buffer& history) {
    detail::adam_step(hyper, step, parameters, first, second, reduced, history, nullptr);
  }
  /// `adam_step` reading the rate, decay, bias corrections and history slot from the step table
  /// `table` at its counter (`hyper.step` and `step.learning_rate` are not read).
  static void adam_step(const AdamHyperparameters& hyper, const OptimizerStepShape& step,
                        Buffer& parameters, Buffer& first, Buffer& second, const Buffer& reduced,
                        Buffer& history, const Buffer& table) {
    detail::adam_step(hyper, step, parameters, first, second, reduced, history, &table);
  }

  /// Adds one to the step table's counter (after the step's optimizer work on it).
  static void advance_step(Buffer& table) {
    stoke::detail::require_floats(detail::backend, table.size(), step_table_header,
                                  "the step table");
    const Binding bindings[] = {Binding::write(table)};
    TrainingKernels::of(table.device()).advance.dispatch(bindings, std::span<const std::byte>(), 1);
  }
};

}  // namespace training

}  // namespace stoke::vulkan

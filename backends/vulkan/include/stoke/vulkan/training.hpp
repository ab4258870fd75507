#pragma once
/// @file
/// Training in Vulkan device memory: float tensors, their uploads and downloads, and the
/// compute shaders of the element-wise optimizers (`sgd_step.comp`, `adam_step.comp`, with the
/// step table's counter `advance_step.comp`) and of a softmax classifier (`softmax_forward.comp`,
/// `softmax_gradients.comp`, `add_softmax_sums.comp`). `vulkan::Backend` exposes them as a
/// `stoke::DeviceBackend`.

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

#include <stoke/learner/kernels/device_training.hpp>
#include <stoke/learner/kernels/device_training_checks.hpp>
#include <stoke/vulkan/buffer.hpp>
#include <stoke/vulkan/compute_pipeline.hpp>
#include <stoke/vulkan/context.hpp>
#include <stoke/vulkan/device.hpp>
#include <stoke/vulkan/registry.hpp>
#include <stoke/vulkan/shaders/adam_step.spv.hpp>
#include <stoke/vulkan/shaders/add_softmax_sums.spv.hpp>
#include <stoke/vulkan/shaders/advance_step.spv.hpp>
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
  ComputePipeline advance;            ///< `advance_step.comp`
  ComputePipeline softmax_forward;    ///< `softmax_forward.comp`
  ComputePipeline softmax_gradients;  ///< `softmax_gradients.comp`
  ComputePipeline add_softmax_sums;   ///< `add_softmax_sums.comp`

 private:
  explicit TrainingKernels(std::shared_ptr<Context> context)
      : sgd(context, shaders::sgd_step, 5, sizeof(std::uint32_t) * 4 + sizeof(float) * 3, 256),
        adam(context, shaders::adam_step, 6, sizeof(std::uint32_t) * 4 + sizeof(float) * 7, 256),
        advance(context, shaders::advance_step, 1, 0, 1),
        softmax_forward(context, shaders::softmax_forward, 6, sizeof(std::uint32_t) * 4, 64),
        softmax_gradients(context, shaders::softmax_gradients, 5, sizeof(std::uint32_t) * 4, 64),
        add_softmax_sums(context, shaders::add_softmax_sums, 3, sizeof(std::uint32_t) * 4, 1),
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

/// `sizes` as pushed: the real rows read on the device where `real_rows` is given.
inline stoke::detail::SoftmaxSizes pushed(stoke::detail::SoftmaxSizes sizes,
                                          const Buffer* real_rows) {
  if (real_rows != nullptr) {
    stoke::detail::check_real_rows(backend, *real_rows);
    sizes.real_rows = read_on_device;
  }
  return sizes;
}

/// The softmax forward pass, its real rows pushed or read from `real_rows`.
inline void softmax_forward(const SoftmaxShape& shape, const Buffer& inputs, const Buffer& labels,
                            const Buffer& parameters, Buffer& dlogits, Buffer& item_stats,
                            const Buffer* real_rows) {
  const auto sizes = pushed(stoke::detail::checked_softmax_forward(backend, shape, inputs, labels,
                                                                   parameters, dlogits, item_stats),
                            real_rows);
  const Binding bindings[] = {Binding::read(inputs),      Binding::read(labels),
                              Binding::read(parameters),  Binding::write(dlogits),
                              Binding::write(item_stats), Binding::read(bound(real_rows, labels))};
  TrainingKernels::of(inputs.device()).softmax_forward.dispatch(bindings, sizes, shape.rows);
}

/// The softmax gradient sums, their real rows pushed or read from `real_rows`.
inline void softmax_gradients(const SoftmaxShape& shape, const Buffer& inputs,
                              const Buffer& dlogits, const Buffer& item_stats, Buffer& reduced,
                              const Buffer* real_rows) {
  const auto sizes = pushed(stoke::detail::checked_softmax_gradients(backend, shape, inputs,
                                                                     dlogits, item_stats, reduced),
                            real_rows);
  const Binding bindings[] = {Binding::read(inputs), Binding::read(dlogits),
                              Binding::read(item_stats), Binding::write(reduced),
                              Binding::read(bound(real_rows, inputs))};
  TrainingKernels::of(inputs.device())
      .softmax_gradients.dispatch(bindings, sizes,
                                  shape.features * shape.classes + shape.classes + reduced_tail);
}

/// The softmax validation sums, their real rows pushed or read from `real_rows`.
inline void add_softmax_sums(const SoftmaxShape& shape, const Buffer& item_stats, Buffer& sums,
                             const Buffer* real_rows) {
  const auto sizes =
      pushed(stoke::detail::checked_softmax_sums(backend, shape, item_stats, sums), real_rows);
  const Binding bindings[] = {Binding::read(item_stats), Binding::write(sums),
                              Binding::read(bound(real_rows, item_stats))};
  TrainingKernels::of(sums.device()).add_softmax_sums.dispatch(bindings, sizes, 1);
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

  /// A softmax classifier's forward pass over a batch (see `SoftmaxShape`): per-item gradients
  /// of the loss by the logits (`rows x classes`) and per-item loss and correctness (`rows x 2`).
  /// `labels` holds one `int32` a row.
  static void softmax_forward(const SoftmaxShape& shape, const Buffer& inputs, const Buffer& labels,
                              const Buffer& parameters, Buffer& dlogits, Buffer& item_stats) {
    detail::softmax_forward(shape, inputs, labels, parameters, dlogits, item_stats, nullptr);
  }
  /// `softmax_forward` reading the real rows from `real_rows` (one `uint32`) on the device.
  static void softmax_forward(const SoftmaxShape& shape, const Buffer& inputs, const Buffer& labels,
                              const Buffer& parameters, Buffer& dlogits, Buffer& item_stats,
                              const Buffer& real_rows) {
    detail::softmax_forward(shape, inputs, labels, parameters, dlogits, item_stats, &real_rows);
  }

  /// A softmax classifier's gradient sums and step sums into the reduced tensor.
  static void softmax_gradients(const SoftmaxShape& shape, const Buffer& inputs,
                                const Buffer& dlogits, const Buffer& item_stats, Buffer& reduced) {
    detail::softmax_gradients(shape, inputs, dlogits, item_stats, reduced, nullptr);
  }
  /// `softmax_gradients` reading the real rows from `real_rows` (one `uint32`) on the device.
  static void softmax_gradients(const SoftmaxShape& shape, const Buffer& inputs,
                                const Buffer& dlogits, const Buffer& item_stats, Buffer& reduced,
                                const Buffer& real_rows) {
    detail::softmax_gradients(shape, inputs, dlogits, item_stats, reduced, &real_rows);
  }

  /// Adds a softmax batch's loss sum, real-item count and correct count to `sums` (3 floats).
  static void add_softmax_sums(const SoftmaxShape& shape, const Buffer& item_stats, Buffer& sums) {
    detail::add_softmax_sums(shape, item_stats, sums, nullptr);
  }
  /// `add_softmax_sums` reading the real rows from `real_rows` (one `uint32`) on the device.
  static void add_softmax_sums(const SoftmaxShape& shape, const Buffer& item_stats, Buffer& sums,
                               const Buffer& real_rows) {
    detail::add_softmax_sums(shape, item_stats, sums, &real_rows);
  }
};

}  // namespace training

}  // namespace stoke::vulkan

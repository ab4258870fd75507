#pragma once
/// @file
/// Training in CUDA device memory: float tensors, their uploads and downloads, and the kernels
/// of the element-wise optimizers and of a softmax classifier (`src/training.cu`, the same
/// expressions as the Vulkan shaders). `cuda::Backend` exposes them as a
/// `stoke::DeviceBackend`.

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <cuda_runtime_api.h>

#include <stoke/core/device.hpp>
#include <stoke/core/device_training.hpp>
#include <stoke/core/device_training_checks.hpp>
#include <stoke/core/error.hpp>
#include <stoke/cuda/buffer.hpp>
#include <stoke/cuda/device.hpp>
#include <stoke/cuda/error.hpp>
#include <stoke/cuda/fence.hpp>
#include <stoke/cuda/kernels.hpp>
#include <stoke/cuda/runtime.hpp>
#include <stoke/cuda/stager.hpp>

/// Device-resident training on CUDA: what `cuda::Backend` offers as a `stoke::DeviceBackend`.
/// Tensors are `Buffer`s; every operation runs on the device's copy stream (where the
/// batchers put their batches), after the buffers' earlier writes (and, for the buffers it
/// writes, their earlier uses), records its use of every buffer, and returns without waiting,
/// except `download`.
namespace stoke::cuda::training {

namespace detail {

/// The stager of `device` that uploads and downloads tensors (made on first use, kept for the
/// life of the process like the device's context).
inline Stager& stager(const Device& device) {
  static auto* stagers = new cuda::detail::StagerCache(4);
  return stagers->of(device);
}

/// The backend's name in the argument checks' messages.
inline constexpr std::string_view backend = "cuda";

/// The kernels' sizes of a softmax batch (checked by `stoke::detail`).
inline kernels::SoftmaxSizes kernel_sizes(const stoke::detail::SoftmaxSizes& sizes) {
  return {sizes.rows, sizes.real_rows, sizes.features, sizes.classes};
}

/// Queues `launch(stream)` (the call of `kernel`'s launcher) on the copy stream of the
/// buffers' device, after the last write of every buffer in `reads` and the last write and
/// uses of every buffer in `writes`; then marks the buffers it read as used by it and those it
/// wrote as written by it. Throws `UsageError` for buffers on different devices and
/// `DeviceError` for a failed launch.
template <class Launch>
void enqueue(const char* kernel, std::initializer_list<const Buffer*> reads,
             std::initializer_list<Buffer*> writes, Launch&& launch) {
  std::vector<const Buffer*> all(writes.begin(), writes.end());
  all.insert(all.end(), reads.begin(), reads.end());
  const Buffer* home = nullptr;  // the first buffer that has a device
  for (const Buffer* buffer : all) {
    if (home == nullptr && buffer->context()) home = buffer;
  }
  if (home == nullptr) return;  // no buffer has a device: every size is zero
  const Device device = home->device();
  for (const Buffer* buffer : all) {
    if (buffer->context() && !(buffer->device() == device)) {
      throw UsageError(std::string("stoke: cuda: ") + kernel + " on " + device_name(device) +
                       " got a tensor on " + device_name(buffer->device()));
    }
  }
  const DeviceGuard guard(device);
  const cudaStream_t stream = home->context()->copy_stream();
  for (const Buffer* buffer : reads) buffer->written().enqueue_wait(stream);
  for (const Buffer* buffer : writes) buffer->enqueue_wait_for_uses(stream);
  check(launch(stream), kernel);
  const Fence done(device, stream);
  for (const Buffer* buffer : reads) buffer->record_use(done);
  for (Buffer* buffer : writes) buffer->mark_written(done);
}

/// `buffer`'s floats for a kernel.
inline float* floats(const Buffer& buffer) noexcept {
  return buffer.floats().data();
}

}  // namespace detail

/// The `stoke::DeviceBackend` operations, as static members: `Backend` derives from this,
/// so they are `Backend::zeros`, `Backend::upload` and so on.
struct Operations {
  /// `floats` zeroed floats on `device`.
  static Buffer zeros(const Device& device, std::size_t floats) {
    Buffer tensor(device, floats * sizeof(float));
    if (tensor.size() == 0) return tensor;
    const DeviceGuard guard(device);
    const cudaStream_t stream = tensor.context()->copy_stream();
    STOKE_CUDA_CHECK(cudaMemsetAsync(tensor.data(), 0, tensor.size(), stream));
    tensor.mark_written(Fence(device, stream));
    return tensor;
  }

  /// Overwrites the start of `tensor` with `bytes` (staged: `bytes` may go once this returns),
  /// after the work queued on `tensor` before.
  static void upload(Buffer& tensor, std::span<const std::byte> bytes) {
    if (bytes.empty()) return;
    detail::stager(tensor.device()).upload_into(tensor, bytes);
  }

  /// The floats of `tensor`, once its writes completed.
  static std::vector<float> download(const Buffer& tensor) {
    if (tensor.size() < sizeof(float)) return {};
    return stoke::detail::floats_of(detail::stager(tensor.device()).download(tensor));
  }

  /// One SGD step on a shard (see `OptimizerStepShape`); `velocity` holds the shard's state.
  static void sgd_step(const SgdHyperparameters& hyper, const OptimizerStepShape& step,
                       Buffer& parameters, Buffer& velocity, const Buffer& reduced,
                       Buffer& history) {
    const auto sizes = stoke::detail::checked_sgd_step(detail::backend, step, parameters, velocity,
                                                       reduced, history);
    const kernels::OptimizerStep shape{sizes.parameters, sizes.begin, sizes.size,
                                       sizes.history_slot, step.learning_rate};
    const kernels::SgdFactors factors{hyper.momentum, hyper.weight_decay};
    detail::enqueue("the sgd_step kernel", {&reduced}, {&parameters, &velocity, &history},
                    [&](cudaStream_t stream) {
                      return kernels::sgd_step(shape, factors, detail::floats(parameters),
                                               detail::floats(velocity), detail::floats(reduced),
                                               detail::floats(history), stream);
                    });
  }

  /// One Adam step on a shard (see `OptimizerStepShape`); `first` and `second` hold the
  /// shard's moments.
  static void adam_step(const AdamHyperparameters& hyper, const OptimizerStepShape& step,
                        Buffer& parameters, Buffer& first, Buffer& second, const Buffer& reduced,
                        Buffer& history) {
    const auto sizes = stoke::detail::checked_adam_step(detail::backend, step, parameters, first,
                                                        second, reduced, history);
    const kernels::OptimizerStep shape{sizes.parameters, sizes.begin, sizes.size,
                                       sizes.history_slot, step.learning_rate};
    const stoke::detail::AdamFactors adam = stoke::detail::adam_factors(hyper, step.learning_rate);
    const kernels::AdamFactors factors{adam.beta1, adam.beta2,       adam.epsilon,
                                       adam.decay, adam.correction1, adam.root_correction2};
    detail::enqueue("the adam_step kernel", {&reduced}, {&parameters, &first, &second, &history},
                    [&](cudaStream_t stream) {
                      return kernels::adam_step(shape, factors, detail::floats(parameters),
                                                detail::floats(first), detail::floats(second),
                                                detail::floats(reduced), detail::floats(history),
                                                stream);
                    });
  }

  /// A softmax classifier's forward pass over a batch (see `SoftmaxShape`): per-item gradients
  /// of the loss by the logits (`rows x classes`) and per-item loss and correctness (`rows x 2`).
  /// `labels` holds one `int32` a row.
  static void softmax_forward(const SoftmaxShape& shape, const Buffer& inputs, const Buffer& labels,
                              const Buffer& parameters, Buffer& dlogits, Buffer& item_stats) {
    const kernels::SoftmaxSizes sizes = detail::kernel_sizes(stoke::detail::checked_softmax_forward(
        detail::backend, shape, inputs, labels, parameters, dlogits, item_stats));
    detail::enqueue("the softmax_forward kernel", {&inputs, &labels, &parameters},
                    {&dlogits, &item_stats}, [&](cudaStream_t stream) {
                      return kernels::softmax_forward(
                          sizes, detail::floats(inputs),
                          static_cast<const std::int32_t*>(labels.data()),
                          detail::floats(parameters), detail::floats(dlogits),
                          detail::floats(item_stats), stream);
                    });
  }

  /// A softmax classifier's gradient sums and step sums into the reduced tensor.
  static void softmax_gradients(const SoftmaxShape& shape, const Buffer& inputs,
                                const Buffer& dlogits, const Buffer& item_stats, Buffer& reduced) {
    const kernels::SoftmaxSizes sizes =
        detail::kernel_sizes(stoke::detail::checked_softmax_gradients(
            detail::backend, shape, inputs, dlogits, item_stats, reduced));
    detail::enqueue("the softmax_gradients kernel", {&inputs, &dlogits, &item_stats}, {&reduced},
                    [&](cudaStream_t stream) {
                      return kernels::softmax_gradients(
                          sizes, detail::floats(inputs), detail::floats(dlogits),
                          detail::floats(item_stats), detail::floats(reduced), stream);
                    });
  }

  /// Adds a softmax batch's loss sum, real-item count and correct count to `sums` (3 floats).
  static void add_softmax_sums(const SoftmaxShape& shape, const Buffer& item_stats, Buffer& sums) {
    const kernels::SoftmaxSizes sizes = detail::kernel_sizes(
        stoke::detail::checked_softmax_sums(detail::backend, shape, item_stats, sums));
    detail::enqueue("the add_softmax_sums kernel", {&item_stats}, {&sums},
                    [&](cudaStream_t stream) {
                      return kernels::add_softmax_sums(sizes, detail::floats(item_stats),
                                                       detail::floats(sums), stream);
                    });
  }
};

}  // namespace stoke::cuda::training

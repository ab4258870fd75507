#pragma once
/// @file
/// Training in CUDA device memory: float tensors, their uploads and downloads, and the kernels
/// of the element-wise optimizers (`src/training.cu`, the same expressions as the Vulkan
/// shaders): what every device model needs. `cuda::Backend` exposes them as a
/// `stoke::DeviceBackend`. A model's own kernels live with that model
/// (`softmax_classifier.hpp`), queued through `detail::enqueue` here.

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <cuda_runtime_api.h>

#include <stoke/core/device.hpp>
#include <stoke/core/error.hpp>
#include <stoke/cuda/buffer.hpp>
#include <stoke/cuda/device.hpp>
#include <stoke/cuda/error.hpp>
#include <stoke/cuda/fence.hpp>
#include <stoke/cuda/kernels.hpp>
#include <stoke/cuda/runtime.hpp>
#include <stoke/cuda/stager.hpp>
#include <stoke/cuda/step_recording.hpp>
#include <stoke/learner/kernels/device_training.hpp>
#include <stoke/learner/kernels/device_training_checks.hpp>

/// Device-resident training on CUDA: what `cuda::Backend` offers as a `stoke::DeviceBackend`.
/// Tensors are `Buffer`s; every operation runs on the device's compute stream (the batchers
/// put their batches on its copy stream), after the buffers' earlier writes (and, for the
/// buffers it writes, their earlier uses), records its use of every buffer, and returns without
/// waiting, except `download`. While a `StepGraph` captures, the operations are recorded into
/// the graph with the buffers they touch, and the graph's launch does the ordering instead.
namespace stoke::cuda::training {

namespace detail {

/// The stager of `device` that uploads and downloads tensors (made on first use, kept for the
/// life of the process like the device's context).
///
/// Why process-wide: `DeviceBackend`'s `upload` and `download` are static (a backend is a type,
/// and a tensor names only its device), so the stager they use cannot belong to a replica or a
/// learner; Vulkan keeps its per-device training state the same way (`TrainingKernels::of`).
/// It costs at most four pinned staging buffers a device, shared by every model there, and
/// carries only a replica's own uploads (parameters, the step table) and downloads (the
/// history, checkpoints): a batch's bytes come through the loader's stager. It is never
/// destroyed, as the device's context is not: freeing pinned memory and streams from a static
/// destructor at exit would race the CUDA runtime's own teardown.
inline Stager& stager(const Device& device) {
  static auto* stagers = new cuda::detail::StagerCache(4);
  return stagers->of(device);
}

/// The backend's name in the argument checks' messages.
inline constexpr std::string_view backend = "cuda";

/// Queues `launch(stream)` (the call of `kernel`'s launcher) on the compute stream of the
/// buffers' device, after the last write of every buffer in `reads` and the last write and
/// uses of every buffer in `writes`; then marks the buffers it read as used by it and those it
/// wrote as written by it. A null read (an optional tensor not given) is left out. Throws
/// `UsageError` for buffers on different devices and `DeviceError` for a failed launch.
template <class Launch>
void enqueue(const char* kernel, std::initializer_list<const Buffer*> optional_reads,
             std::initializer_list<Buffer*> writes, Launch&& launch) {
  std::vector<const Buffer*> reads;
  for (const Buffer* buffer : optional_reads) {
    if (buffer != nullptr) reads.push_back(buffer);
  }
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
  // A step captured on this device (StepGraph) records the operation; its launch orders and
  // marks the buffers.
  if (cuda::detail::StepRecording* const recording =
          home->context()->recording_for(std::this_thread::get_id())) {
    check(launch(recording->stream), kernel);
    for (const Buffer* buffer : reads) recording->reads.emplace_back(buffer, buffer->data());
    for (Buffer* buffer : writes) recording->writes.emplace_back(buffer, buffer->data());
    return;
  }
  const cudaStream_t stream = home->context()->compute_stream();
  for (const Buffer* buffer : reads) buffer->written().enqueue_wait(stream);
  for (const Buffer* buffer : writes) buffer->enqueue_wait_for_uses(stream);
  check(launch(stream), kernel);
  const Fence done(device, stream);
  for (const Buffer* buffer : reads) buffer->record_use(done);
  for (Buffer* buffer : writes) buffer->mark_written_after_uses(done);
}

/// `buffer`'s floats for a kernel.
inline float* floats(const Buffer& buffer) noexcept {
  return buffer.floats().data();
}

/// The kernels' shape of an optimizer step: its scalars from `step`, or, with a `table`, from
/// the step table on the device (checked to hold the step's row).
inline kernels::OptimizerStep optimizer_step(const stoke::detail::OptimizerStepSizes& sizes,
                                             const OptimizerStepShape& step, const Buffer* table) {
  if (table == nullptr) {
    return {sizes.parameters,   sizes.begin,        sizes.size,
            sizes.history_slot, step.learning_rate, nullptr};
  }
  stoke::detail::check_step_table(backend, step, *table);
  return {sizes.parameters, sizes.begin, sizes.size, read_on_device, 0.0f, floats(*table)};
}

/// One SGD step: its scalars from `step`, or, with a `table`, from the step table.
inline void sgd_step(const SgdHyperparameters& hyper, const OptimizerStepShape& step,
                     Buffer& parameters, Buffer& velocity, const Buffer& reduced, Buffer& history,
                     const Buffer* table) {
  const auto sizes =
      stoke::detail::checked_sgd_step(backend, step, parameters, velocity, reduced, history);
  const kernels::OptimizerStep shape = optimizer_step(sizes, step, table);
  const kernels::SgdFactors factors{hyper.momentum, hyper.weight_decay};
  enqueue("the sgd_step kernel", {&reduced, table}, {&parameters, &velocity, &history},
          [&](cudaStream_t stream) {
            return kernels::sgd_step(shape, factors, floats(parameters), floats(velocity),
                                     floats(reduced), floats(history), stream);
          });
}

/// One Adam step: its scalars from `hyper` and `step`, or, with a `table`, the changing ones
/// (rate, decay, bias corrections) from the step table.
inline void adam_step(const AdamHyperparameters& hyper, const OptimizerStepShape& step,
                      Buffer& parameters, Buffer& first, Buffer& second, const Buffer& reduced,
                      Buffer& history, const Buffer* table) {
  const auto sizes =
      stoke::detail::checked_adam_step(backend, step, parameters, first, second, reduced, history);
  const kernels::OptimizerStep shape = optimizer_step(sizes, step, table);
  stoke::detail::AdamFactors adam = stoke::detail::adam_factors(hyper, step.learning_rate);
  if (table != nullptr) adam.decay = adam.correction1 = adam.root_correction2 = 0.0f;  // unread
  const kernels::AdamFactors factors{adam.beta1, adam.beta2,       adam.epsilon,
                                     adam.decay, adam.correction1, adam.root_correction2};
  enqueue("the adam_step kernel", {&reduced, table}, {&parameters, &first, &second, &history},
          [&](cudaStream_t stream) {
            return kernels::adam_step(shape, factors, floats(parameters), floats(first),
                                      floats(second), floats(reduced), floats(history), stream);
          });
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

  /// Sets every 32-bit word of `tensor` to `word`, after its earlier work; nothing is staged,
  /// so nothing waits (a batch's real-row count, a sum started again).
  static void fill_words(Buffer& tensor, std::uint32_t word) {
    const std::size_t words = tensor.size() / sizeof(std::uint32_t);
    if (words == 0) return;
    detail::enqueue("the fill_words kernel", {}, {&tensor}, [&](cudaStream_t stream) {
      return kernels::fill_words(static_cast<std::uint32_t*>(tensor.data()), words, word, stream);
    });
  }

  /// Copies `source` into the start of `target` (both on one device), after `source`'s writes
  /// and `target`'s writes and uses: a batch into a captured step's slot. Throws `UsageError`
  /// when it does not fit.
  static void copy(Buffer& target, const Buffer& source) {
    if (source.size() > target.size()) {
      throw UsageError("stoke: cuda: a copy of " + std::to_string(source.size()) +
                       " bytes into a tensor of " + std::to_string(target.size()));
    }
    if (source.size() == 0) return;
    detail::enqueue("the device copy", {&source}, {&target}, [&](cudaStream_t stream) {
      return cudaMemcpyAsync(target.data(), source.data(), source.size(), cudaMemcpyDeviceToDevice,
                             stream);
    });
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
    detail::sgd_step(hyper, step, parameters, velocity, reduced, history, nullptr);
  }
  /// `sgd_step` reading the rate and the history slot from the step table `table` at its
  /// counter (`step.learning_rate` is not read; `step.history_slot` only checks the sizes).
  static void sgd_step(const SgdHyperparameters& hyper, const OptimizerStepShape& step,
                       Buffer& parameters, Buffer& velocity, const Buffer& reduced, Buffer& history,
                       const Buffer& table) {
    detail::sgd_step(hyper, step, parameters, velocity, reduced, history, &table);
  }

  /// One Adam step on a shard (see `OptimizerStepShape`); `first` and `second` hold the
  /// shard's moments.
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
    detail::enqueue("the advance_step kernel", {}, {&table}, [&](cudaStream_t stream) {
      return kernels::advance_step(static_cast<std::uint32_t*>(table.data()), stream);
    });
  }
};

}  // namespace stoke::cuda::training

#pragma once
/// @file
/// Launchers of the CUDA backend's kernels (compiled in `src/*.cu`: the batchers' and the
/// tests' in `normalize.cu` and `normalize_flip_chw.cu`, training's in `training.cu`); each
/// queues its kernel on `stream` and returns the status of that launch alone (an earlier
/// failure on the thread is not reported as this launch's).

#include <array>
#include <cstddef>
#include <cstdint>

#include <cuda_runtime_api.h>

namespace stoke::cuda::kernels {

/// The float of every byte value, as `stoke::normalization_table` computes it (a plain
/// array, passed to the kernel by value).
struct ByteTable {
  float values[256];  ///< `values[b]` is what byte `b` becomes

  /// The table holding `values`.
  static ByteTable of(const std::array<float, 256>& values) noexcept {
    ByteTable table{};
    for (std::size_t b = 0; b < values.size(); ++b) table.values[b] = values[b];
    return table;
  }
};

/// `out[i] = table.values[in[i]]` for `i < count`, nothing else written. Where `in` is 4-byte
/// and `out` 16-byte aligned (device allocations are), each thread loads a `uchar4` and stores
/// one coalesced `float4`, the table in shared memory, a looping grid of 4 blocks a
/// multiprocessor: it runs near the device's copy bandwidth. The values are those of the
/// table, so they equal `cpu::ImageBatcher`'s bit for bit.
cudaError_t normalize_u8(const std::uint8_t* in, float* out, std::size_t count,
                         const ByteTable& table, cudaStream_t stream) noexcept;

/// The float of every byte value of each of up to three channels (a plain array, passed to
/// the kernel by value): an image normalisation's tables (`stoke::images::Normalization`).
struct ChannelTables {
  float values[3][256];  ///< `values[c][b]` is what byte `b` of channel `c` becomes
};

/// A batch of HWC byte images, one after the other.
struct ImageRowsShape {
  std::uint32_t rows;      ///< images
  std::uint32_t height;    ///< of each image
  std::uint32_t width;     ///< of each image
  std::uint32_t channels;  ///< of each image: 1 or 3
};

/// `out[((n * C + c) * H + y) * W + x] = tables.values[c][b]`, `b` being byte
/// `((n * H + y) * W + x') * C + c` of `in`, `x' = W - 1 - x` where `flips[n]` is non-zero and
/// `x` elsewhere: the rows of `in` mirrored where flagged and normalised into CHW floats, equal
/// bit for bit to `stoke::images::normalize_into` on the host (table entries, nothing computed).
/// `flips` is 4-byte aligned. Where `out` is 16-byte aligned each thread stores four
/// consecutive outputs as one `float4`; a looping grid of 4 blocks a multiprocessor.
cudaError_t normalize_flip_chw(const std::uint8_t* in, const std::uint32_t* flips, float* out,
                               const ImageRowsShape& shape, const ChannelTables& tables,
                               cudaStream_t stream) noexcept;

/// Busy-waits on the device for about `nanoseconds` (the device's global timer), reading
/// `input[0]` when it is not null: a synthetic step of known length for benchmarks and tests.
cudaError_t spin(std::uint64_t nanoseconds, const float* input, float* sink,
                 cudaStream_t stream) noexcept;

/// `out[i] = in[i]` for `i < count`, one float a thread, after spinning about `nanoseconds`:
/// a slow reader for the tests that free or overwrite memory while a kernel still reads it.
cudaError_t delayed_copy(const float* in, float* out, std::size_t count, std::uint64_t nanoseconds,
                         cudaStream_t stream) noexcept;

/// One element-wise optimizer step as the kernels take it (see `stoke::OptimizerStepShape`):
/// the parameters `[begin, begin + size)` step with the gradients
/// `reduced[i] * (1 / reduced[parameters + 1])`; a count of zero changes nothing. Thread 0
/// also copies `reduced`'s three sums to `history[3 * history_slot ...]`. With a `table` (a
/// step table, see `stoke/learner/kernels/step_table.hpp`) the history slot, the rate and Adam's
/// decay and bias corrections are read from the table's row of its counter instead, so the
/// arguments are the same every step.
struct OptimizerStep {
  std::uint32_t parameters;    ///< gradients in `reduced`; the three sums follow
  std::uint32_t begin;         ///< first parameter stepped
  std::uint32_t size;          ///< parameters stepped (the state arrays hold as many)
  std::uint32_t history_slot;  ///< the step's index in the epoch
  float learning_rate;         ///< this step's rate
  const float* table;          ///< the step table, or null: the scalars are these arguments
};

/// SGD's factors (see `stoke::SgdHyperparameters`).
struct SgdFactors {
  float momentum;      ///< velocity decay
  float weight_decay;  ///< L2 factor added to the gradient
};

/// Adam's factors at one step, the bias corrections computed on the host in double as
/// `stoke::Adam` does.
struct AdamFactors {
  float beta1;             ///< first-moment decay
  float beta2;             ///< second-moment decay
  float epsilon;           ///< added to the root of the second moment
  float decay;             ///< `1 - learning_rate * weight_decay`
  float correction1;       ///< `1 - beta1^t`
  float root_correction2;  ///< `sqrt(1 - beta2^t)`
};

/// A softmax classifier's batch (see `stoke::SoftmaxShape`; `classes` is at most
/// `stoke::max_softmax_classes`).
struct SoftmaxSizes {
  std::uint32_t rows;       ///< items in the batch
  std::uint32_t real_rows;  ///< items that are not padding (where `real_rows_on_device` is null)
  std::uint32_t features;   ///< inputs per item
  std::uint32_t classes;    ///< outputs per item
  /// The batch's real rows on the device (one word), or null: they are `real_rows`.
  const std::uint32_t* real_rows_on_device;
};

/// SGD with heavy-ball momentum on a shard: `v = momentum v + (g + weight_decay p)`,
/// `p -= lr v`, evaluated as `stoke::Sgd` does (no fused multiply-add).
cudaError_t sgd_step(const OptimizerStep& step, const SgdFactors& factors, float* parameters,
                     float* velocity, const float* reduced, float* history,
                     cudaStream_t stream) noexcept;

/// Adam with decoupled weight decay on a shard, evaluated as `stoke::Adam` does:
/// `p = p decay - lr (m / c1) / (sqrt(v) / rc2 + eps)`.
cudaError_t adam_step(const OptimizerStep& step, const AdamFactors& factors, float* parameters,
                      float* first, float* second, const float* reduced, float* history,
                      cudaStream_t stream) noexcept;

/// `out[i] = word` for `i < count` (32-bit words).
cudaError_t fill_words(std::uint32_t* out, std::size_t count, std::uint32_t word,
                       cudaStream_t stream) noexcept;

/// One thread: adds one to the step table's counter (its first word, see `OptimizerStep`).
cudaError_t advance_step(std::uint32_t* table, cudaStream_t stream) noexcept;

/// One thread per item: the gradient of its loss by its logits (`rows x classes`) and its loss
/// and correctness (`rows x 2`); padding items get zeros.
cudaError_t softmax_forward(const SoftmaxSizes& sizes, const float* inputs,
                            const std::int32_t* labels, const float* parameters, float* dlogits,
                            float* item_stats, cudaStream_t stream) noexcept;

/// One thread per output: the weight and bias gradient sums over the real items, then their
/// loss sum, count and correct count (overwriting `reduced`).
cudaError_t softmax_gradients(const SoftmaxSizes& sizes, const float* inputs, const float* dlogits,
                              const float* item_stats, float* reduced,
                              cudaStream_t stream) noexcept;

/// One thread: adds the real items' loss sum, count and correct count to `sums[0..3)`.
cudaError_t add_softmax_sums(const SoftmaxSizes& sizes, const float* item_stats, float* sums,
                             cudaStream_t stream) noexcept;

}  // namespace stoke::cuda::kernels

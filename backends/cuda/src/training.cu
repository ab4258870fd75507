// The CUDA backend's training kernels: the element-wise optimizers (SGD, Adam) and a softmax
// classifier's forward pass, gradient sums and validation sums. Each computes what the Vulkan
// shaders (backends/vulkan/shaders/*.comp) compute, in the same order; the optimizers equal
// stoke::Sgd and stoke::Adam on the host bit for bit: the optimizers spell out every operation
// as an IEEE intrinsic (__fmul_rn, __fadd_rn, __fdiv_rn, __fsqrt_rn: correctly rounded, never
// fused, whatever -use_fast_math or -fmad say) in the host's order, and the file is compiled
// with -fmad=false besides (no multiply-add is fused in the other kernels where the host has
// none; see CMakeLists.txt).
#include <cfloat>
#include <cstddef>
#include <cstdint>

#include <stoke/cuda/kernels.hpp>
#include <stoke/learner/kernels/device_training.hpp>
#include <stoke/learner/kernels/softmax_classifier.hpp>

#include "launch.cuh"

namespace stoke::cuda::kernels {
namespace {

using detail::blocks_for;
using detail::Grid;
using detail::launch;

/// This thread's first index of a grid-stride loop.
__device__ std::size_t first_index() {
  return static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
}

/// The stride of a grid-stride loop.
__device__ std::size_t grid_stride() {
  return static_cast<std::size_t>(gridDim.x) * blockDim.x;
}

/// The scalars of a step that change from step to step: the kernel's arguments, or the step
/// table's row of its counter.
struct StepRow {
  std::size_t slot;        ///< the history slot
  float learning_rate;     ///< the rate
  float decay;             ///< Adam's decay (SGD: unread)
  float correction1;       ///< Adam's first bias correction (SGD: unread)
  float root_correction2;  ///< Adam's second one (SGD: unread)
};

/// `step`'s scalars: the arguments (Adam's decay and corrections as given), or the table's row.
__device__ StepRow step_row(const OptimizerStep& step, float decay, float correction1,
                            float root_correction2) {
  if (step.table == nullptr) {
    return {step.history_slot, step.learning_rate, decay, correction1, root_correction2};
  }
  const std::size_t slot = *reinterpret_cast<const std::uint32_t*>(step.table);
  const float* row = step.table + step_table_header + step_table_row * slot;
  return {slot, row[0], row[1], row[2], row[3]};
}

/// Thread 0 copies the step's three sums into its history slot. Returns false when the count
/// is not positive (the step then changes nothing); else `scale` is `1 / count`.
__device__ bool gradient_scale(const OptimizerStep& step, std::size_t slot, const float* reduced,
                               float* history, float& scale) {
  const std::size_t tail = step.parameters;
  if (first_index() == 0) {
    for (std::size_t k = 0; k < 3; ++k) history[3 * slot + k] = reduced[tail + k];
  }
  const float count = reduced[tail + 1];
  if (count <= 0.0f) return false;
  scale = __fdiv_rn(1.0f, count);
  return true;
}

__global__ void sgd_step_kernel(OptimizerStep step, SgdFactors factors, float* parameters,
                                float* velocity, const float* reduced, float* history) {
  const StepRow row = step_row(step, 1.0f, 1.0f, 1.0f);
  float scale = 0.0f;
  if (!gradient_scale(step, row.slot, reduced, history, scale)) return;
  for (std::size_t i = first_index(); i < step.size; i += grid_stride()) {
    const std::size_t p = step.begin + i;
    const float g = __fmul_rn(reduced[p], scale);
    // stoke::sgd_update's order, each operation rounded alone as on the host:
    //   v = (momentum * v) + (g + (weight_decay * p));  p = p - (lr * v)
    const float v = __fadd_rn(__fmul_rn(factors.momentum, velocity[i]),
                              __fadd_rn(g, __fmul_rn(factors.weight_decay, parameters[p])));
    velocity[i] = v;
    parameters[p] = __fsub_rn(parameters[p], __fmul_rn(row.learning_rate, v));
  }
}

__global__ void adam_step_kernel(OptimizerStep step, AdamFactors factors, float* parameters,
                                 float* first, float* second, const float* reduced,
                                 float* history) {
  const StepRow row = step_row(step, factors.decay, factors.correction1, factors.root_correction2);
  float scale = 0.0f;
  if (!gradient_scale(step, row.slot, reduced, history, scale)) return;
  for (std::size_t i = first_index(); i < step.size; i += grid_stride()) {
    const std::size_t p = step.begin + i;
    const float g = __fmul_rn(reduced[p], scale);
    // stoke::adam_update's order (learner/include/stoke/learner/optim/adam.hpp), each
    // operation rounded alone (IEEE square root and division, nothing fused), as on the host:
    //   m = (beta1 * m) + ((1 - beta1) * g)
    //   v = (beta2 * v) + ((1 - beta2) * (g * g))
    //   p = (p * decay) - ((lr * (m / c1)) / ((sqrt(v) / rc2) + epsilon))
    const float m =
        __fadd_rn(__fmul_rn(factors.beta1, first[i]), __fmul_rn(__fsub_rn(1.0f, factors.beta1), g));
    const float v = __fadd_rn(__fmul_rn(factors.beta2, second[i]),
                              __fmul_rn(__fsub_rn(1.0f, factors.beta2), __fmul_rn(g, g)));
    first[i] = m;
    second[i] = v;
    const float change =
        __fdiv_rn(__fmul_rn(row.learning_rate, __fdiv_rn(m, row.correction1)),
                  __fadd_rn(__fdiv_rn(__fsqrt_rn(v), row.root_correction2), factors.epsilon));
    parameters[p] = __fsub_rn(__fmul_rn(parameters[p], row.decay), change);
  }
}

__global__ void fill_words_kernel(std::uint32_t* out, std::size_t count, std::uint32_t word) {
  for (std::size_t i = first_index(); i < count; i += grid_stride()) out[i] = word;
}

__global__ void advance_step_kernel(std::uint32_t* table) {
  if (first_index() == 0) table[0] += 1;
}

/// The batch's real rows: the argument, or the count on the device.
__device__ std::size_t real_rows(const SoftmaxSizes& sizes) {
  return sizes.real_rows_on_device == nullptr ? sizes.real_rows : *sizes.real_rows_on_device;
}

/// Threads of a forward block: a thread a (row, class) pair, `forward_rows(classes)` rows a block.
constexpr unsigned forward_block_threads = 64;
static_assert(forward_block_threads >= 2 * max_softmax_classes);

/// The rows a forward block takes at once.
__host__ __device__ constexpr unsigned forward_rows(std::size_t classes) {
  return forward_block_threads / static_cast<unsigned>(classes);
}

/// The forward pass, a thread a (row, class) pair so a batch fills the GPU: each thread sums
/// its logit over the features in order (as the host and the shaders do), the block shares the
/// row's logits, and one thread a row takes the softmax, its gradients and the item's stats.
__global__ void softmax_forward_kernel(SoftmaxSizes sizes, const float* inputs,
                                       const std::int32_t* labels, const float* parameters,
                                       float* dlogits, float* item_stats) {
  __shared__ float logits[forward_block_threads];
  const std::size_t features = sizes.features;
  const std::size_t classes = sizes.classes;
  const std::size_t real = real_rows(sizes);
  const unsigned rows_per_block = forward_rows(classes);
  const unsigned local_row = threadIdx.x / static_cast<unsigned>(classes);
  const unsigned c = threadIdx.x % static_cast<unsigned>(classes);
  float* z = logits + static_cast<std::size_t>(local_row) * classes;
  for (std::size_t first = static_cast<std::size_t>(blockIdx.x) * rows_per_block;
       first < sizes.rows; first += static_cast<std::size_t>(gridDim.x) * rows_per_block) {
    const std::size_t i = first + local_row;
    const bool mine = local_row < rows_per_block && i < sizes.rows;
    if (mine && i < real) {
      float sum = 0.0f;
      for (std::size_t f = 0; f < features; ++f) {
        sum += inputs[i * features + f] * parameters[f * classes + c];
      }
      z[c] = sum + parameters[features * classes + c];
    }
    __syncthreads();
    if (mine && c == 0) {
      float* dlogit = dlogits + i * classes;
      if (i >= real) {
        for (std::size_t k = 0; k < classes; ++k) dlogit[k] = 0.0f;
        item_stats[2 * i] = 0.0f;
        item_stats[2 * i + 1] = 0.0f;
      } else {
        float top = -FLT_MAX;
        std::size_t best = 0;
        for (std::size_t k = 0; k < classes; ++k) {
          if (z[k] > top) {
            top = z[k];
            best = k;
          }
        }
        float total = 0.0f;
        for (std::size_t k = 0; k < classes; ++k) total += expf(z[k] - top);
        // The host checked the labels; one out of range reads no memory and gives a NaN loss.
        const auto y = static_cast<std::size_t>(static_cast<std::uint32_t>(labels[i]));
        for (std::size_t k = 0; k < classes; ++k) {
          dlogit[k] = expf(z[k] - top) / total - (k == y ? 1.0f : 0.0f);
        }
        item_stats[2 * i] = y < classes ? logf(total) - (z[y] - top) : __int_as_float(0x7fffffff);
        item_stats[2 * i + 1] = best == y ? 1.0f : 0.0f;
      }
    }
    __syncthreads();
  }
}

__global__ void softmax_gradients_kernel(SoftmaxSizes sizes, const float* inputs,
                                         const float* dlogits, const float* item_stats,
                                         float* reduced) {
  const std::size_t features = sizes.features;
  const std::size_t classes = sizes.classes;
  const std::size_t weights = features * classes;
  const std::size_t parameter_count = weights + classes;
  const std::size_t real = real_rows(sizes);
  for (std::size_t j = first_index(); j < parameter_count + 3; j += grid_stride()) {
    float sum = 0.0f;
    if (j < weights) {
      const std::size_t f = j / classes;
      const std::size_t c = j % classes;
      for (std::size_t i = 0; i < real; ++i) {
        sum += inputs[i * features + f] * dlogits[i * classes + c];
      }
    } else if (j < parameter_count) {
      const std::size_t c = j - weights;
      for (std::size_t i = 0; i < real; ++i) sum += dlogits[i * classes + c];
    } else if (j == parameter_count + 1) {
      sum = static_cast<float>(real);
    } else {
      const std::size_t k = j == parameter_count ? 0 : 1;  // loss sum, or correct count
      for (std::size_t i = 0; i < real; ++i) sum += item_stats[2 * i + k];
    }
    reduced[j] = sum;
  }
}

__global__ void add_softmax_sums_kernel(SoftmaxSizes sizes, const float* item_stats, float* sums) {
  if (first_index() != 0) return;
  const std::size_t real = real_rows(sizes);
  float loss = 0.0f;
  float correct = 0.0f;
  for (std::size_t i = 0; i < real; ++i) {
    loss += item_stats[2 * i];
    correct += item_stats[2 * i + 1];
  }
  sums[0] += loss;
  sums[1] += static_cast<float>(real);
  sums[2] += correct;
}

}  // namespace

cudaError_t sgd_step(const OptimizerStep& step, const SgdFactors& factors, float* parameters,
                     float* velocity, const float* reduced, float* history,
                     cudaStream_t stream) noexcept {
  return launch(sgd_step_kernel, blocks_for(step.size), stream, step, factors, parameters, velocity,
                reduced, history);
}

cudaError_t adam_step(const OptimizerStep& step, const AdamFactors& factors, float* parameters,
                      float* first, float* second, const float* reduced, float* history,
                      cudaStream_t stream) noexcept {
  return launch(adam_step_kernel, blocks_for(step.size), stream, step, factors, parameters, first,
                second, reduced, history);
}

cudaError_t fill_words(std::uint32_t* out, std::size_t count, std::uint32_t word,
                       cudaStream_t stream) noexcept {
  if (count == 0) return cudaSuccess;
  return launch(fill_words_kernel, blocks_for(count), stream, out, count, word);
}

cudaError_t advance_step(std::uint32_t* table, cudaStream_t stream) noexcept {
  return launch(advance_step_kernel, Grid(1, 1), stream, table);
}

cudaError_t softmax_forward(const SoftmaxSizes& sizes, const float* inputs,
                            const std::int32_t* labels, const float* parameters, float* dlogits,
                            float* item_stats, cudaStream_t stream) noexcept {
  if (sizes.rows == 0) return cudaSuccess;
  const unsigned rows_per_block = forward_rows(sizes.classes);
  const std::size_t blocks = (sizes.rows + rows_per_block - 1) / rows_per_block;
  const auto grid = static_cast<unsigned>(blocks < 65535 ? blocks : 65535);
  return launch(softmax_forward_kernel, Grid(grid, rows_per_block * sizes.classes), stream, sizes,
                inputs, labels, parameters, dlogits, item_stats);
}

cudaError_t softmax_gradients(const SoftmaxSizes& sizes, const float* inputs, const float* dlogits,
                              const float* item_stats, float* reduced,
                              cudaStream_t stream) noexcept {
  const std::size_t outputs =
      static_cast<std::size_t>(sizes.features) * sizes.classes + sizes.classes + 3;
  return launch(softmax_gradients_kernel, blocks_for(outputs), stream, sizes, inputs, dlogits,
                item_stats, reduced);
}

cudaError_t add_softmax_sums(const SoftmaxSizes& sizes, const float* item_stats, float* sums,
                             cudaStream_t stream) noexcept {
  return launch(add_softmax_sums_kernel, Grid(1, 1), stream, sizes, item_stats, sums);
}

}  // namespace stoke::cuda::kernels

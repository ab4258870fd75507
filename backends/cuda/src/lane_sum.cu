// The lanes' sum of the CUDA backend's collective: one GPU's lanes added left to right.
#include <stoke/cuda/lane_sum.hpp>

#include "launch.cuh"

namespace stoke::cuda::kernels {
namespace {

__global__ void sum_lanes_in_order_kernel(float* out, LaneInputs in, std::size_t length) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t j = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; j < length;
       j += stride) {
    float sum = in.at[0][j];
    for (unsigned i = 1; i < in.count; ++i) sum = __fadd_rn(sum, in.at[i][j]);
    out[j] = sum;
  }
}

}  // namespace

cudaError_t sum_lanes_in_order(float* out, const LaneInputs& in, std::size_t length,
                               cudaStream_t stream) noexcept {
  if (length == 0) return cudaSuccess;
  if (in.count == 0 || in.count > max_lane_inputs) return cudaErrorInvalidValue;
  return detail::launch(sum_lanes_in_order_kernel, detail::Grid(detail::resident_blocks(length)),
                        stream, out, in, length);
}

}  // namespace stoke::cuda::kernels

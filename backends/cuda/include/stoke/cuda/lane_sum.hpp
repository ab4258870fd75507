#pragma once
/// @file
/// The kernel of the lanes' collective (compiled in `src/lane_sum.cu`): the lanes of one GPU
/// summed in a fixed order, left to right.

#include <cstddef>

#include <cuda_runtime_api.h>

namespace stoke::cuda::kernels {

/// The most lanes one sum takes (`stoke::cuda::max_lanes_per_gpu`, which this header does not
/// include: nvcc compiles it without stoke's host headers).
inline constexpr unsigned max_lane_inputs = 8;

/// The floats of the lanes of one GPU, in the order they are summed (a plain array, passed to
/// the kernel by value).
struct LaneInputs {
  const float* at[max_lane_inputs];  ///< lane `i`'s floats (for `i < count`)
  unsigned count;                    ///< lanes
};

/// `out[j] = ((in.at[0][j] + in.at[1][j]) + in.at[2][j]) + ...` for `j < length`, each add
/// correctly rounded (no contraction): the order of `stoke::SharedMemoryCollective`, so the
/// bits are the host's. `out` may be `in.at[0]`. Queues the kernel on `stream` and returns the
/// status of that launch alone.
cudaError_t sum_lanes_in_order(float* out, const LaneInputs& in, std::size_t length,
                               cudaStream_t stream) noexcept;

}  // namespace stoke::cuda::kernels

// The kernel of images::CudaImageBatcher: HWC u8 rows rendered on the host, mirrored where
// flagged and normalised into CHW float32 rows by the host's per-channel tables.
#include <stoke/cuda/kernels.hpp>

#include "launch.cuh"

namespace stoke::cuda::kernels {
namespace {

using detail::blocks_for;
using detail::launch;

/// One thread an output value (a grid-stride loop past the grid): consecutive threads write
/// consecutive floats of a CHW plane. The tables are copied to shared memory first, since
/// lookups by arbitrary bytes in a warp would serialise in the kernel parameters' bank.
__global__ void normalize_flip_chw_kernel(const std::uint8_t* in, const std::uint32_t* flips,
                                          float* out, ImageRowsShape shape, ChannelTables tables) {
  __shared__ float shared[3][256];
  for (unsigned i = threadIdx.x; i < shape.channels * 256U; i += blockDim.x) {
    shared[i / 256][i % 256] = tables.values[i / 256][i % 256];
  }
  __syncthreads();
  const std::size_t plane = static_cast<std::size_t>(shape.height) * shape.width;
  const std::size_t row_size = plane * shape.channels;
  const std::size_t count = row_size * shape.rows;
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += stride) {
    const std::size_t n = i / row_size;
    const std::size_t in_row = i - n * row_size;
    const auto c = static_cast<std::uint32_t>(in_row / plane);
    const std::size_t in_plane = in_row - c * plane;
    const std::size_t y = in_plane / shape.width;
    std::size_t x = in_plane - y * shape.width;
    if (flips[n] != 0) x = shape.width - 1 - x;
    const std::size_t b = n * row_size + (y * shape.width + x) * shape.channels + c;
    out[i] = shared[c][in[b]];
  }
}

}  // namespace

cudaError_t normalize_flip_chw(const std::uint8_t* in, const std::uint32_t* flips, float* out,
                               const ImageRowsShape& shape, const ChannelTables& tables,
                               cudaStream_t stream) noexcept {
  const std::size_t count =
      static_cast<std::size_t>(shape.rows) * shape.height * shape.width * shape.channels;
  if (count == 0) return cudaSuccess;
  if (shape.channels != 1 && shape.channels != 3) return cudaErrorInvalidValue;
  return launch(normalize_flip_chw_kernel, blocks_for(count), stream, in, flips, out, shape,
                tables);
}

}  // namespace stoke::cuda::kernels

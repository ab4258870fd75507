// The kernel of cuda::AugmentingImageBatcher: HWC u8 rows rendered on the host, mirrored where
// flagged and normalised into CHW float32 rows by the host's per-channel tables.
#include <stoke/cuda/kernels.hpp>

#include "launch.cuh"

namespace stoke::cuda::kernels {
namespace {

using detail::launch;
using detail::resident_blocks;

/// Looping over the grid, thread t writes outputs [4 t, 4 t + 4) of the first `quads` quads
/// (0 where `out` is not 16-byte aligned) with one `float4` store, so a warp writes 512
/// consecutive bytes; the outputs after them are written one a thread. An output's place
/// (image, channel, row, column) is divided out once a quad and stepped from there. The tables
/// are copied to shared memory first, since lookups by arbitrary bytes in a warp would
/// serialise in the kernel parameters' bank.
__global__ void normalize_flip_chw_kernel(const std::uint8_t* in, const std::uint32_t* flips,
                                          float* out, ImageRowsShape shape, ChannelTables tables,
                                          std::size_t quads) {
  __shared__ float shared[3][256];
  for (unsigned i = threadIdx.x; i < shape.channels * 256U; i += blockDim.x) {
    shared[i / 256][i % 256] = tables.values[i / 256][i % 256];
  }
  __syncthreads();
  const std::size_t width = shape.width;
  const std::size_t height = shape.height;
  const std::size_t channels = shape.channels;
  const std::size_t plane = height * width;
  const std::size_t row_size = plane * channels;
  const std::size_t count = row_size * shape.rows;
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  const std::size_t first = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  // The place of output i: image n, channel c, row y, column x.
  struct Place {
    std::size_t n, c, y, x;
  };
  const auto place_of = [&](std::size_t i) {
    const std::size_t n = i / row_size;
    const std::size_t in_row = i - n * row_size;
    const std::size_t c = in_row / plane;
    const std::size_t in_plane = in_row - c * plane;
    const std::size_t y = in_plane / width;
    return Place{n, c, y, in_plane - y * width};
  };
  const auto value = [&](const Place& at) {
    const std::size_t x = flips[at.n] != 0 ? width - 1 - at.x : at.x;
    return shared[at.c][in[at.n * row_size + (at.y * width + x) * channels + at.c]];
  };
  const auto advance = [&](Place& at) {
    if (++at.x < width) return;
    at.x = 0;
    if (++at.y < height) return;
    at.y = 0;
    if (++at.c < channels) return;
    at.c = 0;
    ++at.n;
  };
  auto* out4 = reinterpret_cast<float4*>(out);
  for (std::size_t q = first; q < quads; q += stride) {
    Place at = place_of(4 * q);
    float4 four;
    four.x = value(at);
    advance(at);
    four.y = value(at);
    advance(at);
    four.z = value(at);
    advance(at);
    four.w = value(at);
    __stcs(out4 + q, four);
  }
  for (std::size_t i = quads * 4 + first; i < count; i += stride) out[i] = value(place_of(i));
}

}  // namespace

cudaError_t normalize_flip_chw(const std::uint8_t* in, const std::uint32_t* flips, float* out,
                               const ImageRowsShape& shape, const ChannelTables& tables,
                               cudaStream_t stream) noexcept {
  const std::size_t count =
      static_cast<std::size_t>(shape.rows) * shape.height * shape.width * shape.channels;
  if (count == 0) return cudaSuccess;
  if (shape.channels != 1 && shape.channels != 3) return cudaErrorInvalidValue;
  const std::size_t quads = reinterpret_cast<std::uintptr_t>(out) % 16 == 0 ? count / 4 : 0;
  return launch(normalize_flip_chw_kernel, resident_blocks(quads != 0 ? quads : count), stream, in,
                flips, out, shape, tables, quads);
}

}  // namespace stoke::cuda::kernels

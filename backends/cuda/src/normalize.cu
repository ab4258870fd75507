// The CUDA backend's kernels: the u8 -> normalised float32 lookup of cuda::ImageBatcher, and
// the spin and delayed-copy kernels that benchmarks and tests use as steps of known length.
#include <stoke/cuda/kernels.hpp>

#include "launch.cuh"

namespace stoke::cuda::kernels {
namespace {

using detail::blocks_for;
using detail::launch;

/// Bytes one thread converts in the vector path.
constexpr std::size_t bytes_per_thread = 16;

/// Converts four bytes of `word` (little-endian) through `table`.
__device__ float4 lookup4(const float* table, unsigned word) {
  return make_float4(table[word & 0xFFU], table[(word >> 8) & 0xFFU], table[(word >> 16) & 0xFFU],
                     table[word >> 24]);
}

/// Copies the table into shared memory: lookups by arbitrary bytes in a warp would serialise
/// in the kernel parameters' constant bank.
__device__ void load_table(float* shared, const ByteTable& table) {
  for (unsigned i = threadIdx.x; i < 256; i += blockDim.x) shared[i] = table.values[i];
  __syncthreads();
}

/// Thread t converts bytes [16 t, 16 t + 16) with one 16-byte load and four float4 stores
/// for the first `vectors` vectors (0 where a pointer is not 16-byte aligned); the bytes after
/// them are converted one a thread.
__global__ void normalize_u8_kernel(const std::uint8_t* in, float* out, std::size_t count,
                                    std::size_t vectors, ByteTable table) {
  __shared__ float shared[256];
  load_table(shared, table);
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  const std::size_t first = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const auto* in16 = reinterpret_cast<const uint4*>(in);
  auto* out4 = reinterpret_cast<float4*>(out);
  for (std::size_t v = first; v < vectors; v += stride) {
    const uint4 bytes = __ldg(in16 + v);
    float4* target = out4 + v * 4;
    __stcs(target + 0, lookup4(shared, bytes.x));
    __stcs(target + 1, lookup4(shared, bytes.y));
    __stcs(target + 2, lookup4(shared, bytes.z));
    __stcs(target + 3, lookup4(shared, bytes.w));
  }
  for (std::size_t i = vectors * bytes_per_thread + first; i < count; i += stride) {
    out[i] = shared[in[i]];
  }
}

/// The device's nanosecond clock.
__device__ std::uint64_t global_time() {
  std::uint64_t now = 0;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
  return now;
}

/// Busy-waits about `nanoseconds` on the device's clock.
__device__ void spin_for(std::uint64_t nanoseconds) {
  const std::uint64_t start = global_time();
  while (global_time() - start < nanoseconds) {
  }
}

__global__ void spin_kernel(std::uint64_t nanoseconds, const float* input, float* sink) {
  spin_for(nanoseconds);
  if (input != nullptr && sink != nullptr) *sink = input[0];
}

__global__ void delayed_copy_kernel(const float* in, float* out, std::size_t count,
                                    std::uint64_t nanoseconds) {
  spin_for(nanoseconds);
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += stride) {
    out[i] = in[i];
  }
}

}  // namespace

cudaError_t normalize_u8(const std::uint8_t* in, float* out, std::size_t count,
                         const ByteTable& table, cudaStream_t stream) noexcept {
  if (count == 0) return cudaSuccess;
  const bool aligned = reinterpret_cast<std::uintptr_t>(in) % 16 == 0 &&
                       reinterpret_cast<std::uintptr_t>(out) % 16 == 0;
  // Aligned: one vector a thread (a grid-stride loop past 65535 blocks), the tail of fewer
  // than 16 bytes needs one block. Not aligned: every byte alone.
  const std::size_t vectors = aligned ? count / bytes_per_thread : 0;
  return launch(normalize_u8_kernel, blocks_for(aligned ? vectors : count), stream, in, out, count,
                vectors, table);
}

cudaError_t spin(std::uint64_t nanoseconds, const float* input, float* sink,
                 cudaStream_t stream) noexcept {
  return launch(spin_kernel, detail::Grid(1, 1), stream, nanoseconds, input, sink);
}

cudaError_t delayed_copy(const float* in, float* out, std::size_t count, std::uint64_t nanoseconds,
                         cudaStream_t stream) noexcept {
  if (count == 0) return cudaSuccess;
  return launch(delayed_copy_kernel, blocks_for(count), stream, in, out, count, nanoseconds);
}

}  // namespace stoke::cuda::kernels

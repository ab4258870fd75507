// The CUDA backend's kernels: the u8 -> normalised float32 lookup of cuda::ImageBatcher, and
// the spin and delayed-copy kernels that benchmarks and tests use as steps of known length.
#include <stoke/cuda/kernels.hpp>

#include "launch.cuh"

namespace stoke::cuda::kernels {
namespace {

using detail::blocks_for;
using detail::launch;
using detail::resident_blocks;

/// Copies the table into shared memory: lookups by arbitrary bytes in a warp would serialise
/// in the kernel parameters' constant bank.
__device__ void load_table(float* shared, const ByteTable& table) {
  for (unsigned i = threadIdx.x; i < 256; i += blockDim.x) shared[i] = table.values[i];
  __syncthreads();
}

/// Looping over the grid, thread t converts bytes [4 t, 4 t + 4) of the first `quads` quads
/// (0 where `in` is not 4-byte or `out` not 16-byte aligned) with one `uchar4` load and one
/// `float4` store: a warp reads 128 consecutive bytes and writes 512 consecutive bytes, whole
/// sectors both. The bytes after them (fewer than 4, or all where not aligned) are converted
/// one a thread. Every value is a table entry, so it equals the CPU's by construction.
__global__ void normalize_u8_kernel(const std::uint8_t* in, float* out, std::size_t count,
                                    std::size_t quads, ByteTable table) {
  __shared__ float shared[256];
  load_table(shared, table);
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  const std::size_t first = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const auto* in4 = reinterpret_cast<const uchar4*>(in);
  auto* out4 = reinterpret_cast<float4*>(out);
  for (std::size_t q = first; q < quads; q += stride) {
    const uchar4 bytes = __ldg(in4 + q);
    __stcs(out4 + q,
           make_float4(shared[bytes.x], shared[bytes.y], shared[bytes.z], shared[bytes.w]));
  }
  for (std::size_t i = quads * 4 + first; i < count; i += stride) out[i] = shared[in[i]];
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
  const bool aligned = reinterpret_cast<std::uintptr_t>(in) % 4 == 0 &&
                       reinterpret_cast<std::uintptr_t>(out) % 16 == 0;
  // Aligned: one quad a thread; the tail of fewer than 4 bytes is taken by the first threads.
  // Not aligned: every byte alone. Either way a looping grid of 4 blocks a multiprocessor.
  const std::size_t quads = aligned ? count / 4 : 0;
  return launch(normalize_u8_kernel, resident_blocks(aligned ? quads : count), stream, in, out,
                count, quads, table);
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

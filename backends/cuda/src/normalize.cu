// The u8 -> normalised float32 kernel of cuda::ImageBatcher.
#include <stoke/cuda/kernels.hpp>

namespace stoke::cuda::kernels {
namespace {

__global__ void normalize_u8_kernel(const std::uint8_t* in, float* out, std::size_t count,
                                    float mean, float std) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += stride) {
    // The same operations, in the same order, as cpu::ClassificationBatcher's table;
    // __fdiv_rn and __fsub_rn keep the compiler from contracting or approximating them.
    out[i] = __fdiv_rn(__fsub_rn(__fdiv_rn(static_cast<float>(in[i]), 255.0F), mean), std);
  }
}

}  // namespace

cudaError_t normalize_u8(const std::uint8_t* in, float* out, std::size_t count, float mean,
                         float std, cudaStream_t stream) noexcept {
  if (count == 0) return cudaSuccess;
  constexpr unsigned threads = 256;
  const std::size_t wanted = (count + threads - 1) / threads;
  const unsigned blocks = static_cast<unsigned>(wanted < 65535 ? wanted : 65535);
  normalize_u8_kernel<<<blocks, threads, 0, stream>>>(in, out, count, mean, std);
  return cudaGetLastError();
}

}  // namespace stoke::cuda::kernels

// The launch helpers every .cu file of the CUDA backend shares: grid sizes and a launch that
// reports its own status.
#pragma once

#include <cstddef>
#include <type_traits>

#include <cuda_runtime_api.h>

namespace stoke::cuda::kernels::detail {

/// Threads in a block, unless a launch says otherwise.
constexpr unsigned threads_per_block = 256;

/// A grid of at most `limit` blocks covering `work` items, one per thread (at least one block:
/// grid-stride loops take the rest).
inline unsigned blocks_for(std::size_t work, std::size_t limit = 65535) {
  const std::size_t wanted = (work + threads_per_block - 1) / threads_per_block;
  return static_cast<unsigned>(wanted < limit ? (wanted == 0 ? 1 : wanted) : limit);
}

/// The blocks and threads of a one-dimensional launch.
struct Grid {
  /// `blocks` blocks of `threads` threads.
  Grid(unsigned block_count, unsigned block_threads = threads_per_block)
      : blocks(block_count), threads(block_threads) {}
  unsigned blocks;   ///< blocks in the grid
  unsigned threads;  ///< threads in a block
};

/// Launches `kernel` on `grid` and returns the status of this launch only (cudaLaunchKernel
/// reports its own failure; cudaGetLastError would also report an earlier call's). The
/// arguments convert to the kernel's parameter types.
template <class... Args>
cudaError_t launch(void (*kernel)(Args...), Grid grid, cudaStream_t stream,
                   std::type_identity_t<Args>... args) noexcept {
  void* pointers[] = {static_cast<void*>(&args)...};
  return cudaLaunchKernel(reinterpret_cast<const void*>(kernel), dim3(grid.blocks),
                          dim3(grid.threads), pointers, 0, stream);
}

}  // namespace stoke::cuda::kernels::detail

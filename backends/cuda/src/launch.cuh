// The launch helpers every .cu file of the CUDA backend shares: grid sizes and a launch that
// reports its own status.
#pragma once

#include <atomic>
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

/// The multiprocessors of the current device, asked once per device (0 when the runtime cannot
/// say).
inline unsigned multiprocessors() noexcept {
  constexpr int cached = 64;
  static std::atomic<int> known[cached] = {};
  int device = 0;
  if (cudaGetDevice(&device) != cudaSuccess) return 0;
  if (device >= 0 && device < cached) {
    if (const int count = known[device].load(std::memory_order_relaxed); count > 0) {
      return static_cast<unsigned>(count);
    }
  }
  int count = 0;
  if (cudaDeviceGetAttribute(&count, cudaDevAttrMultiProcessorCount, device) != cudaSuccess ||
      count <= 0) {
    return 0;
  }
  if (device >= 0 && device < cached) known[device].store(count, std::memory_order_relaxed);
  return static_cast<unsigned>(count);
}

/// A looping grid for `work` items, one per thread: `per_multiprocessor` blocks on each
/// multiprocessor of the current device (enough to hide the memory's latency, few enough that
/// every block stays resident and the table each block copies to shared memory is copied
/// rarely), fewer when the work needs fewer.
inline unsigned resident_blocks(std::size_t work, unsigned per_multiprocessor = 4) {
  const unsigned wanted = blocks_for(work);
  const unsigned resident = multiprocessors() * per_multiprocessor;
  return resident == 0 || wanted < resident ? wanted : resident;
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

#pragma once
/// @file
/// A real device fault for tests: a kernel that executes `__trap()` (compiled in
/// trap_kernel.cu). It ends the CUDA context of the process: run it in a child process.

#include <cuda_runtime_api.h>

namespace stoke::testing {

/// Queues a one-thread kernel on `stream` that waits until `*gate` is non-zero, then executes
/// `__trap()`; returns the launch's status. `gate` is mapped pinned host memory
/// (`cudaHostAlloc` with `cudaHostAllocMapped`) that the host sets once it has queued what
/// must be queued before the fault (a fault ends every later CUDA call of the process).
cudaError_t launch_trap(cudaStream_t stream, const volatile unsigned* gate) noexcept;

}  // namespace stoke::testing

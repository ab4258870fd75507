// A kernel that faults the device on purpose (trap_kernel.hpp).
#include "trap_kernel.hpp"

namespace stoke::testing {
namespace {

__global__ void trap_kernel(const volatile unsigned* gate) {
  while (*gate == 0) {
  }
  __trap();
}

}  // namespace

cudaError_t launch_trap(cudaStream_t stream, const volatile unsigned* gate) noexcept {
  trap_kernel<<<1, 1, 0, stream>>>(gate);
  return cudaPeekAtLastError();
}

}  // namespace stoke::testing

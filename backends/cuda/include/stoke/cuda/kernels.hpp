#pragma once
/// @file
/// Launchers of the CUDA backend's kernels (compiled in `src/*.cu`); each queues its kernel
/// on `stream` and returns the launch status.

#include <cstddef>
#include <cstdint>

#include <cuda_runtime_api.h>

namespace stoke::cuda::kernels {

/// `out[i] = (in[i] / 255 - mean) / std` for `i < count`, in float32 with IEEE division, so
/// the values equal `cpu::ClassificationBatcher`'s bit for bit.
cudaError_t normalize_u8(const std::uint8_t* in, float* out, std::size_t count, float mean,
                         float std, cudaStream_t stream) noexcept;

}  // namespace stoke::cuda::kernels

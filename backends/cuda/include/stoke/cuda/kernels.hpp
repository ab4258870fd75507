#pragma once
/// @file
/// Launchers of the CUDA backend's kernels (compiled in `src/*.cu`); each queues its kernel
/// on `stream` and returns the status of that launch alone (an earlier failure on the thread
/// is not reported as this launch's).

#include <array>
#include <cstddef>
#include <cstdint>

#include <cuda_runtime_api.h>

namespace stoke::cuda::kernels {

/// The float of every byte value, as `stoke::detail::normalization_table` computes it (a plain
/// array, passed to the kernel by value).
struct ByteTable {
  float values[256];  ///< `values[b]` is what byte `b` becomes

  /// The table holding `values`.
  static ByteTable of(const std::array<float, 256>& values) noexcept {
    ByteTable table{};
    for (std::size_t b = 0; b < values.size(); ++b) table.values[b] = values[b];
    return table;
  }
};

/// `out[i] = table.values[in[i]]` for `i < count`. Reads 16 bytes and writes four float4 a
/// thread where `in` and `out` are 16-byte aligned (device allocations are), so it runs at the
/// device's memory bandwidth; the values are those of the table, so they equal
/// `cpu::ClassificationBatcher`'s bit for bit.
cudaError_t normalize_u8(const std::uint8_t* in, float* out, std::size_t count,
                         const ByteTable& table, cudaStream_t stream) noexcept;

/// Busy-waits on the device for about `nanoseconds` (the device's global timer), reading
/// `input[0]` when it is not null: a synthetic step of known length for benchmarks and tests.
cudaError_t spin(std::uint64_t nanoseconds, const float* input, float* sink,
                 cudaStream_t stream) noexcept;

/// `out[i] = in[i]` for `i < count`, one float a thread, after spinning about `nanoseconds`:
/// a slow reader for the tests that free or overwrite memory while a kernel still reads it.
cudaError_t delayed_copy(const float* in, float* out, std::size_t count, std::uint64_t nanoseconds,
                         cudaStream_t stream) noexcept;

}  // namespace stoke::cuda::kernels

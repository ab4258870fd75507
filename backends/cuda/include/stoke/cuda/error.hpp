#pragma once
/// @file
/// `cuda::DeviceError`: a failed CUDA runtime (or NCCL) call with its status and where it was
/// made; `check` and `STOKE_CUDA_CHECK` throw it, `log_error` only reports.

#include <cstdio>
#include <source_location>
#include <string>

#include <cuda_runtime_api.h>

#include <stoke/core/error.hpp>

namespace stoke::cuda {

/// Which library returned the status of a `DeviceError`.
enum class Library { cuda, nccl };

/// A CUDA runtime or NCCL call that failed: carries the status (a `cudaError_t` or an
/// `ncclResult_t`), which library returned it, and the source location (`where()`).
class DeviceError : public Error {
 public:
  /// `what` names the call, `reason` is the library's text for `status`.
  DeviceError(Library library, int status, const std::string& what, const std::string& reason,
              std::source_location where = std::source_location::current())
      : Error(describe(library, status, what, reason, where), where),
        library_(library),
        status_(status) {}
  /// A failed CUDA runtime call.
  DeviceError(cudaError_t status, const std::string& what,
              std::source_location where = std::source_location::current())
      : DeviceError(Library::cuda, static_cast<int>(status), what,
                    std::string(cudaGetErrorName(status)) + ": " + cudaGetErrorString(status),
                    where) {}

  /// Which library failed.
  [[nodiscard]] Library library() const noexcept { return library_; }
  /// The raw status (`cudaError_t` or `ncclResult_t`).
  [[nodiscard]] int status() const noexcept { return status_; }
  /// The status as a `cudaError_t` (`cudaErrorUnknown` for an NCCL error).
  [[nodiscard]] cudaError_t cuda_status() const noexcept {
    return library_ == Library::cuda ? static_cast<cudaError_t>(status_) : cudaErrorUnknown;
  }

 private:
  static std::string describe(Library library, int status, const std::string& what,
                              const std::string& reason, const std::source_location& where) {
    return std::string("stoke: ") + (library == Library::cuda ? "cuda" : "nccl") + ": " + what +
           " failed with " + reason + " (" + std::to_string(status) + ") at " + where.file_name() +
           ":" + std::to_string(where.line());
  }
  Library library_;
  int status_;
};

/// Throws a `DeviceError` unless `status` is `cudaSuccess`; `what` names the call.
inline void check(cudaError_t status, const char* what,
                  std::source_location where = std::source_location::current()) {
  if (status != cudaSuccess) throw DeviceError(status, what, where);
}

/// Writes a failed `status` to stderr instead of throwing (for destructors); true on success.
inline bool log_error(cudaError_t status, const char* what,
                      std::source_location where = std::source_location::current()) noexcept {
  if (status == cudaSuccess) return true;
  std::fprintf(stderr, "stoke: cuda: %s failed with %s at %s:%u\n", what, cudaGetErrorName(status),
               where.file_name(), static_cast<unsigned>(where.line()));
  return false;
}

}  // namespace stoke::cuda

/// Evaluates a CUDA runtime call; throws a `stoke::cuda::DeviceError` naming it (with the
/// call site) unless it returns `cudaSuccess`.
#define STOKE_CUDA_CHECK(call) ::stoke::cuda::check((call), #call)
/// Evaluates a CUDA runtime call in a destructor: a failure is written to stderr.
#define STOKE_CUDA_LOG(call) ::stoke::cuda::log_error((call), #call)

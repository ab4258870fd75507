#pragma once
/// @file
/// `vulkan::DeviceError`: a failed Vulkan call with its `VkResult` and where it was made;
/// `check` and `STOKE_VK_CHECK` throw it.

#include <source_location>
#include <string>

#include <vulkan/vulkan_core.h>

#include <stoke/core/error.hpp>

namespace stoke::vulkan {

/// The name of a `VkResult`, such as `"VK_ERROR_DEVICE_LOST"`.
[[nodiscard]] inline const char* result_name(VkResult result) noexcept {
  switch (result) {
    case VK_SUCCESS:
      return "VK_SUCCESS";
    case VK_NOT_READY:
      return "VK_NOT_READY";
    case VK_TIMEOUT:
      return "VK_TIMEOUT";
    case VK_INCOMPLETE:
      return "VK_INCOMPLETE";
    case VK_ERROR_OUT_OF_HOST_MEMORY:
      return "VK_ERROR_OUT_OF_HOST_MEMORY";
    case VK_ERROR_OUT_OF_DEVICE_MEMORY:
      return "VK_ERROR_OUT_OF_DEVICE_MEMORY";
    case VK_ERROR_INITIALIZATION_FAILED:
      return "VK_ERROR_INITIALIZATION_FAILED";
    case VK_ERROR_DEVICE_LOST:
      return "VK_ERROR_DEVICE_LOST";
    case VK_ERROR_MEMORY_MAP_FAILED:
      return "VK_ERROR_MEMORY_MAP_FAILED";
    case VK_ERROR_LAYER_NOT_PRESENT:
      return "VK_ERROR_LAYER_NOT_PRESENT";
    case VK_ERROR_EXTENSION_NOT_PRESENT:
      return "VK_ERROR_EXTENSION_NOT_PRESENT";
    case VK_ERROR_FEATURE_NOT_PRESENT:
      return "VK_ERROR_FEATURE_NOT_PRESENT";
    case VK_ERROR_INCOMPATIBLE_DRIVER:
      return "VK_ERROR_INCOMPATIBLE_DRIVER";
    case VK_ERROR_TOO_MANY_OBJECTS:
      return "VK_ERROR_TOO_MANY_OBJECTS";
    case VK_ERROR_FORMAT_NOT_SUPPORTED:
      return "VK_ERROR_FORMAT_NOT_SUPPORTED";
    case VK_ERROR_FRAGMENTED_POOL:
      return "VK_ERROR_FRAGMENTED_POOL";
    case VK_ERROR_OUT_OF_POOL_MEMORY:
      return "VK_ERROR_OUT_OF_POOL_MEMORY";
    case VK_ERROR_UNKNOWN:
      return "VK_ERROR_UNKNOWN";
    default:
      return "VkResult";
  }
}

/// A Vulkan call that failed: carries its `VkResult` and the place in the source that made
/// it (`where()`, from `stoke::Error`).
class DeviceError : public Error {
 public:
  /// `what` names the failed call; `where` defaults to the throwing call site.
  DeviceError(VkResult result, const std::string& what,
              std::source_location where = std::source_location::current())
      : Error(describe(result, what, where), where), result_(result) {}

  /// The status the call returned.
  [[nodiscard]] VkResult result() const noexcept { return result_; }

 private:
  static std::string describe(VkResult result, const std::string& what,
                              const std::source_location& where) {
    return "stoke: vulkan: " + what + " failed with " + result_name(result) + " (" +
           std::to_string(static_cast<int>(result)) + ") at " + where.file_name() + ":" +
           std::to_string(where.line());
  }
  VkResult result_;
};

/// Throws a `DeviceError` when `result` is an error code (negative); `what` names the call.
/// Non-error statuses (`VK_TIMEOUT`, `VK_INCOMPLETE`, ...) are returned for the caller.
inline VkResult check(VkResult result, const char* what,
                      std::source_location where = std::source_location::current()) {
  if (result < 0) throw DeviceError(result, what, where);
  return result;
}

}  // namespace stoke::vulkan

/// Evaluates a Vulkan call and throws a `stoke::vulkan::DeviceError` naming it (with the
/// call site) when it returns an error code; yields the `VkResult` otherwise.
#define STOKE_VK_CHECK(call) ::stoke::vulkan::check((call), #call)

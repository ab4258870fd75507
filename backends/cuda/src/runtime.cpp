// The per-device contexts of the CUDA backend (one copy stream per device).
#include <mutex>
#include <unordered_map>

#include <stoke/cuda/runtime.hpp>

namespace stoke::cuda::detail {

std::shared_ptr<DeviceContext> DeviceContext::of(const Device& device) {
  static std::mutex mutex;
  // Never destroyed: streams must not be torn down after the CUDA runtime at exit.
  static auto* contexts = new std::unordered_map<Device, std::shared_ptr<DeviceContext>>();
  std::lock_guard lock(mutex);
  auto& context = (*contexts)[device];
  if (!context) context = std::make_shared<DeviceContext>(device);
  return context;
}

}  // namespace stoke::cuda::detail

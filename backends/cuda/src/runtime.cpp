// The per-device contexts of the CUDA backend (a copy and a compute stream per device) and the
// pool of idle events.
#include <mutex>
#include <unordered_map>
#include <vector>

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

namespace {
/// Idle events by GPU ordinal, and their lock.
struct IdleEvents {
  std::mutex mutex;
  std::unordered_map<int, std::vector<cudaEvent_t>> by_gpu;
};
/// The process's idle events (made on first use; never destroyed, as the contexts).
IdleEvents& idle_events() {
  static auto* idle = new IdleEvents();
  return *idle;
}
}  // namespace

cudaEvent_t EventPool::take(const Device& device) {
  {
    IdleEvents& events = idle_events();
    const std::lock_guard lock(events.mutex);
    std::vector<cudaEvent_t>& idle = events.by_gpu[device.ordinal];
    if (!idle.empty()) {
      cudaEvent_t event = idle.back();
      idle.pop_back();
      return event;
    }
  }
  const DeviceGuard guard(device);
  cudaEvent_t event = nullptr;
  STOKE_CUDA_CHECK(cudaEventCreateWithFlags(&event, cudaEventDisableTiming));
  return event;
}

void EventPool::give(int ordinal, cudaEvent_t event) noexcept {
  try {
    IdleEvents& events = idle_events();
    const std::lock_guard lock(events.mutex);
    events.by_gpu[ordinal].push_back(event);
  } catch (...) {  // no memory to keep it: destroy it
    STOKE_CUDA_LOG(cudaEventDestroy(event));
  }
}

}  // namespace stoke::cuda::detail

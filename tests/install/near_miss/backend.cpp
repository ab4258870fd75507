// Near miss of `Backend`: devices but no `name()`, given to `DataLoaderBuilder`.
#include <cstddef>
#include <vector>

#include <stoke/cpu/device.hpp>
#include <stoke/data/builder.hpp>

struct MyBackend {
  using Device = stoke::cpu::Device;
  static std::vector<Device> devices() { return {Device{0}}; }
#ifdef STOKE_NEAR_MISS_FIXED
  static const char* name() { return "mine"; }
#endif
};

struct Identity {
  std::vector<int> batch(std::vector<int> items, const stoke::cpu::Device&) const { return items; }
};

int main() {
  auto builder = stoke::DataLoaderBuilder<MyBackend, Identity>({});
  return static_cast<int>(builder.options().batch_size) - 1;
}

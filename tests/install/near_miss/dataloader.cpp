// Near miss of `DataLoader`: a loader of its own with everything but `slice`, given to
// `stoke::split`.
#include <cstddef>
#include <vector>

#include <stoke/cpu/backend.hpp>
#include <stoke/data/split.hpp>

struct MyLoader {
  using device_type = stoke::cpu::Device;
  using batch_type = int;
  std::vector<int> iter() { return {1, 2}; }
  std::size_t num_items() const { return 2; }
  void set_device(const device_type&) {}
#ifdef STOKE_NEAR_MISS_FIXED
  MyLoader slice(std::size_t, std::size_t) const { return *this; }
#endif
  MyLoader share(std::size_t, std::size_t) const { return *this; }
};

int main() {
  const auto parts = stoke::split(MyLoader{}, stoke::cpu::Backend::devices(2));
  return static_cast<int>(parts.size()) - 2;
}

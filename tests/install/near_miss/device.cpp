// Near miss of `Device`: hashable and comparable, but not printable (no `operator<<`).
#include <cstddef>
#include <functional>
#include <ostream>

#include <stoke/core/device.hpp>

struct Gpu {
  int index = 0;
  friend bool operator==(const Gpu&, const Gpu&) = default;
#ifdef STOKE_NEAR_MISS_FIXED
  friend std::ostream& operator<<(std::ostream& out, const Gpu& gpu) {
    return out << "gpu:" << gpu.index;
  }
#endif
};
template <>
struct std::hash<Gpu> {
  std::size_t operator()(const Gpu& gpu) const noexcept { return std::hash<int>{}(gpu.index); }
};

int main() {
  return static_cast<int>(stoke::device_name(Gpu{1}).size());
}

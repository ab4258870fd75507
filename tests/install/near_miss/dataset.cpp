// Near miss of `Dataset`: a size but no `get(i)`, given to a transform.
#include <cstddef>

#include <stoke/data/transforms/shuffled.hpp>

struct Numbers {
  std::size_t size() const { return 8; }
#ifdef STOKE_NEAR_MISS_FIXED
  int get(std::size_t index) const { return static_cast<int>(index); }
#endif
};

int main() {
  const auto shuffled = Numbers{} | stoke::shuffled(1);
  return static_cast<int>(shuffled.size()) - 8;
}

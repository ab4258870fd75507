// One program, three translation units: mixed_import.cpp does `import stoke;`, this one
// includes the headers, mixed_both.cpp does both. Loaders made in one are split, iterated and
// restored in the other, and an exception thrown in one is caught by type in the other: the module
// and the headers declare the same entities. Exits non-zero on the first mismatch.
#include <cstddef>
#include <cstdio>
#include <numeric>
#include <string>
#include <utility>
#include <vector>

#include <stoke/stoke.hpp>

namespace mixed {
using Loader = stoke::MultiThreadLoader<stoke::InMemoryDataset<int>,
                                        stoke::cpu::StackBatcher<float>, stoke::cpu::Backend>;
}  // namespace mixed
#include "mixed.hpp"

namespace mixed {

Loader make_loader_in_header_unit(std::size_t count, std::size_t device) {
  std::vector<int> items(count);
  std::iota(items.begin(), items.end(), 0);
  return stoke::DataLoaderBuilder<stoke::cpu::Backend, stoke::cpu::StackBatcher<float>>({})
      .batch_size(4)
      .shuffle(3)
      .num_workers(2)
      .drop_last()
      .device(stoke::cpu::Device{device})
      .build(stoke::InMemoryDataset<int>(std::move(items)));
}

}  // namespace mixed

namespace {

int failures = 0;

void check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "stoke_module_mixed: check failed: %s\n", what);
    ++failures;
  }
}

/// The sum of all items of one epoch, iterated here (in the including TU).
double sum_here(mixed::Loader& loader) {
  double sum = 0;
  for (const auto& batch : loader.iter()) {
    for (const float value : batch.data.values()) sum += value;
  }
  return sum;
}

}  // namespace

int main() {
  constexpr std::size_t kCount = 40;  // 10 batches of 4
  const double all = kCount * (kCount - 1) / 2.0;

  // Made in the module TU, split and iterated here.
  mixed::Loader from_module = mixed::make_loader_in_module_unit(kCount, 0);
  static_assert(stoke::SplitSource<mixed::Loader>);
  std::vector<mixed::Loader> parts = stoke::split(from_module, stoke::cpu::Backend::devices(2));
  check(sum_here(parts[0]) + sum_here(parts[1]) == all, "split parts cover the epoch once");

  // Made here, iterated in the module TU, on the device set here.
  mixed::Loader from_headers = mixed::make_loader_in_header_unit(kCount, 0);
  from_headers.set_device(stoke::cpu::Device{1});
  std::vector<std::size_t> devices;
  check(mixed::sum_in_module_unit(from_headers, devices) == all, "module TU sees every item");
  check(devices.size() == 10 && devices.front() == 1, "module TU sees the device set here");
  check(mixed::sum_in_both_unit(from_headers) == all, "a TU with both sees every item");

  // The state taken here restores the loader made in the module TU exactly.
  mixed::Loader second = mixed::make_loader_in_module_unit(kCount, 0);
  std::vector<std::size_t> ignored;
  const double epoch0 = mixed::sum_in_module_unit(second, ignored);
  stoke::LoaderState state = second.state();
  check(state.epoch == 1 && epoch0 == all, "state after one epoch");
  mixed::Loader resumed = mixed::make_loader_in_header_unit(kCount, 0);
  resumed.restore(state);
  auto a = second.iter();
  auto b = resumed.iter();
  check((*a.begin()).indices == (*b.begin()).indices, "both TUs compute the same epoch order");

  // An exception type thrown in the module TU is caught by type here.
  try {
    mixed::throw_input_error_in_module_unit("from the module TU");
  } catch (const stoke::Error& error) {
    check(dynamic_cast<const stoke::InputError*>(&error) != nullptr &&
              std::string(error.what()) == "from the module TU",
          "stoke::InputError crosses the TUs");
  }

  if (failures != 0) return 1;
  std::printf("stoke_module_mixed: loaders and errors cross between import and #include\n");
  return 0;
}

#pragma once
/// @file
/// What the two translation units of stoke_module_mixed exchange. This header names no stoke
/// header: the TU that imports stoke and the TU that includes the headers each spell the types
/// themselves, and the linker joins them, which works only if both spellings are one entity.
#include <cstddef>
#include <string>
#include <vector>

namespace mixed {

// Each TU first declares `mixed::Loader`, spelled from its own stoke names:
// `MultiThreadLoader<InMemoryDataset<int>, cpu::StackBatcher<float>, cpu::Backend>`.

/// Built in the importing TU, from the module's names.
Loader make_loader_in_module_unit(std::size_t count, std::size_t device);
/// Built in the including TU, from the headers.
Loader make_loader_in_header_unit(std::size_t count, std::size_t device);
/// Iterates one epoch in the importing TU: the sum of all items, and the devices seen.
double sum_in_module_unit(Loader& loader, std::vector<std::size_t>& devices);
/// Iterates one epoch in a third TU, which includes the headers and then imports stoke (as a
/// TU does that uses a backend the module leaves out, such as CUDA or Vulkan).
double sum_in_both_unit(Loader& loader);
/// Throws `stoke::InputError` from the importing TU.
[[noreturn]] void throw_input_error_in_module_unit(const std::string& message);

}  // namespace mixed

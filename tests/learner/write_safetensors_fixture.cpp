// Writes a safetensors file for check_safetensors.py, which reads it with the reference
// `safetensors` package. Usage: stoke_write_safetensors_fixture <output path>
#include <cstdint>
#include <exception>
#include <iostream>
#include <map>
#include <string>
#include <vector>

#include <stoke/learner/io/safetensors.hpp>

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: " << argv[0] << " <output path>\n";
    return 2;
  }
  // The values check_safetensors.py expects: keep both files in step.
  std::vector<float> weight(12);
  for (std::size_t i = 0; i < weight.size(); ++i) weight[i] = static_cast<float>(i) * 0.5F - 1.0F;
  const std::vector<float> bias{0.25F, -4.0F, 1e-3F};
  const std::vector<std::int64_t> step{123456789012LL, -7};
  const std::vector<std::uint8_t> mask{1, 0, 1};
  const std::vector<float> scale{2.5F};
  try {
    stoke::save_safetensors(argv[1],
                            {{"layer.weight", stoke::make_tensor_view<float>(weight, {3, 4})},
                             {"layer.bias", stoke::make_tensor_view<float>(bias, {3})},
                             {"step", stoke::make_tensor_view<std::int64_t>(step, {2})},
                             {"mask", stoke::make_tensor_view<std::uint8_t>(mask, {3})},
                             {"scale", stoke::make_tensor_view<float>(scale, {})}},
                            {{"epoch", "3"}, {"writer", "stoke"}});
  } catch (const std::exception& error) {
    std::cerr << error.what() << '\n';
    return 1;
  }
  return 0;
}

#pragma once
// `StackNpyMembers`, the batcher of storage_bench over WebDataset tar shards whose samples are
// `.npy` members of float32 images (`stacked_loader<StackNpyMembers>` is its loader).
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include <stoke/core/error.hpp>
#include <stoke/images/image.hpp>
#include <stoke/stoke.hpp>

namespace stoke_bench {

/// Where the values of the `.npy` file `bytes` begin (after its header, version 1, 2 or 3);
/// throws `InputError` naming `source` when it is not a `.npy` file.
inline std::size_t npy_values_offset(std::span<const std::uint8_t> bytes,
                                     const std::string& source) {
  constexpr std::string_view magic("\x93NUMPY", 6);
  if (bytes.size() < 12 || std::memcmp(bytes.data(), magic.data(), magic.size()) != 0) {
    throw stoke::InputError("storage_bench: " + source + " is not a .npy member");
  }
  const std::size_t header =
      bytes[6] == 1 ? 10 + (bytes[8] | (std::size_t{bytes[9]} << 8U))
                    : 12 + (bytes[8] | (std::size_t{bytes[9]} << 8U) |
                            (std::size_t{bytes[10]} << 16U) | (std::size_t{bytes[11]} << 24U));
  if (header > bytes.size() || (bytes.size() - header) % sizeof(float) != 0) {
    throw stoke::InputError("storage_bench: " + source + " has a header of " +
                            std::to_string(header) + " bytes in " + std::to_string(bytes.size()));
  }
  return header;
}

/// Stacks the float32 `.npy` members of a batch's samples into one tensor [rows, values], as
/// `StackRows` stacks array rows (the samples' members are read in place in the fetched shard).
struct StackNpyMembers {
  stoke::cpu::BufferPool pool{};

  stoke::cpu::Tensor<float> batch(std::vector<stoke::images::EncodedImage> samples,
                                  const stoke::cpu::Device& device) const {
    std::size_t length = 0;
    if (!samples.empty()) {
      const auto& first = samples.front();
      length = (first.bytes.size() - npy_values_offset(first.bytes, first.source)) / sizeof(float);
    }
    auto out = stoke::cpu::Tensor<float>::uninitialized({samples.size(), length}, device, pool);
    for (std::size_t i = 0; i < samples.size(); ++i) {
      const auto& sample = samples[i];
      const std::size_t offset = npy_values_offset(sample.bytes, sample.source);
      if (sample.bytes.size() - offset != length * sizeof(float)) {
        throw stoke::InputError("storage_bench: " + sample.source + " holds " +
                                std::to_string((sample.bytes.size() - offset) / sizeof(float)) +
                                " values, not " + std::to_string(length));
      }
      std::memcpy(out.row(i).data(), sample.bytes.data() + offset, length * sizeof(float));
    }
    return out;
  }
};

}  // namespace stoke_bench

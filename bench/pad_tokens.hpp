#pragma once
// `PadTokens`, the batcher of storage_bench over token stores: a batch's sequences padded to
// its longest into one int32 tensor [rows, longest], as a language model's step takes them.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include <stoke/stoke.hpp>

namespace stoke_bench {

/// Pads a batch's sequences (int32 tokens) with -1 to the longest of them, row by row.
struct PadTokens {
  stoke::cpu::BufferPool pool{};

  stoke::cpu::Tensor<std::int32_t> batch(std::vector<stoke::ArrayRow<std::int32_t>> sequences,
                                         const stoke::cpu::Device& device) const {
    std::size_t longest = 0;
    for (const auto& sequence : sequences) longest = std::max(longest, sequence.values.size());
    auto out =
        stoke::cpu::Tensor<std::int32_t>::uninitialized({sequences.size(), longest}, device, pool);
    for (std::size_t i = 0; i < sequences.size(); ++i) {
      const auto row = out.row(i);
      const auto end = std::ranges::copy(sequences[i].values, row.begin()).out;
      std::fill(end, row.end(), -1);
    }
    return out;
  }
};

}  // namespace stoke_bench

#pragma once
/// @file
/// Samples a batcher replaced: a batcher that cannot use a sample (an image that fails to
/// decode) may, under a policy, put another sample in its row so that the batch keeps its
/// size. It says how many it replaced per epoch, and the learner reports that count in its
/// metrics (`EpochMetrics::replaced_samples`, the CSV and the epoch's line).

#include <concepts>
#include <cstddef>

namespace stoke {

/// A replacing batcher: one that counts the samples it replaced.
///
/// Requirements:
/// 1. `t.replaced_samples(epoch)`, on a `const` batcher, returns the number of distinct
///    samples replaced in `epoch` so far, in this process (copies of the batcher share the
///    count);
/// 2. it may be called from any thread while batches are made.
template <class T>
concept ReplacingBatcher = requires(const T& batcher, std::size_t epoch) {
  { batcher.replaced_samples(epoch) } -> std::convertible_to<std::size_t>;
};

/// The samples the batcher of `loader` replaced in `epoch`: 0 for a loader whose batcher
/// replaces none (or one that does not show its batcher).
template <class Loader>
[[nodiscard]] std::size_t replaced_samples(const Loader& loader, std::size_t epoch) {
  if constexpr (requires { loader.batcher(); } &&
                ReplacingBatcher<std::remove_cvref_t<decltype(loader.batcher())>>) {
    return static_cast<std::size_t>(loader.batcher().replaced_samples(epoch));
  } else {
    return 0;
  }
}

}  // namespace stoke

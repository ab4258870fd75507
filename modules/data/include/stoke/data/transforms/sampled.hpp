#pragma once
/// @file
/// `SampledDataset` and `stoke::sampled(count, seed, replacement)`: `count` samples drawn at
/// random, with or without replacement.

#include <bit>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <utility>

#include <stoke/core/error.hpp>
#include <stoke/core/rng.hpp>
#include <stoke/data/dataset.hpp>
#include <stoke/data/detail/dataset_view.hpp>
#include <stoke/data/order.hpp>
#include <stoke/data/transforms/pipe.hpp>

namespace stoke {

/// How `sampled` draws.
enum class Replacement {
  with,     ///< every sample is an independent uniform draw
  without,  ///< full passes over a permutation: each sample once per pass
};

namespace detail {

/// A uniform integer in `[0, bound)` (requires `bound > 0`), without bias: Lemire's
/// multiply-and-reject for 32-bit bounds, masked rejection on 64-bit words above that.
[[nodiscard]] constexpr std::uint64_t uniform_below(SampleRng& rng, std::uint64_t bound) noexcept {
  if (bound <= std::numeric_limits<std::uint32_t>::max()) {
    const auto bound32 = static_cast<std::uint32_t>(bound);
    std::uint64_t product = std::uint64_t{rng()} * bound32;
    if (static_cast<std::uint32_t>(product) < bound32) {
      const std::uint32_t threshold = static_cast<std::uint32_t>(-bound32) % bound32;
      while (static_cast<std::uint32_t>(product) < threshold) {
        product = std::uint64_t{rng()} * bound32;
      }
    }
    return product >> 32;
  }
  const std::uint64_t mask =
      std::numeric_limits<std::uint64_t>::max() >> std::countl_zero(bound - 1);
  for (;;) {
    const std::uint64_t high = rng();
    const std::uint64_t draw = ((high << 32) | rng()) & mask;
    if (draw < bound) return draw;
  }
}

}  // namespace detail

/// `count` samples of `S` drawn under `seed`.
///
/// - With replacement, sample `i` is inner index `uniform_below(SampleRng(seed, 0, i), n)`:
///   independent, unbiased, and a pure function of (seed, i).
/// - Without replacement, `count` may exceed `n = inner.size()`: sample `i` is position
///   `i % n` of pass `i / n`, and pass `p` is the permutation `EpochOrder(n, seed, p)`, so
///   each inner sample appears `floor(count / n)` or `ceil(count / n)` times.
template <Dataset S>
class SampledDataset {
 public:
  /// `count` samples of `inner`; throws `UsageError` when `count > 0` and
  /// `inner` is empty.
  SampledDataset(S inner, std::size_t count, std::uint64_t seed, Replacement replacement)
      : inner_(std::move(inner)),
        inner_size_(inner_.size()),
        count_(count),
        seed_(seed),
        replacement_(replacement) {
    if (count_ > 0 && inner_size_ == 0) {
      throw UsageError("stoke: cannot draw " + std::to_string(count_) +
                       " samples from an empty dataset");
    }
  }

  /// Number of samples: `count`.
  [[nodiscard]] std::size_t size() const noexcept { return count_; }

  /// Sample `inner_index(index)` of the inner dataset.
  [[nodiscard]] detail::get_result_t<S> get(std::size_t index) const {
    return inner_.get(inner_index(index));
  }

  /// The inner dataset's index drawn for sample `index`; throws `UsageError` when
  /// `index >= size()`.
  [[nodiscard]] std::size_t inner_index(std::size_t index) const {
    stoke::check_index(index, count_, "SampledDataset");
    if (replacement_ == Replacement::with) {
      SampleRng rng(seed_, 0, index);
      return static_cast<std::size_t>(detail::uniform_below(rng, inner_size_));
    }
    return EpochOrder(inner_size_, seed_, index / inner_size_)(index % inner_size_);
  }

  /// Whether samples are drawn with replacement.
  [[nodiscard]] Replacement replacement() const noexcept { return replacement_; }

  /// The inner dataset.
  [[nodiscard]] const S& inner() const noexcept { return inner_; }

 private:
  S inner_;
  std::size_t inner_size_ = 0;
  std::size_t count_ = 0;
  std::uint64_t seed_ = 0;
  Replacement replacement_ = Replacement::without;
};

/// `dataset | sampled(count, seed, replacement)`: a `SampledDataset` of `count` draws.
constexpr auto sampled(std::size_t count, std::uint64_t seed, Replacement replacement) {
  return DatasetAdaptor([count, seed, replacement]<Dataset S>(S dataset) {
    return SampledDataset<S>(std::move(dataset), count, seed, replacement);
  });
}

}  // namespace stoke

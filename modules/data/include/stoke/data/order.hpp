#pragma once
/// @file
/// Epoch order: a keyed bijection from positions to dataset indices, a pure function of
/// (seed, epoch). O(1) memory and O(1) expected time per position, for any dataset size.

#include <bit>
#include <cstddef>
#include <cstdint>

#include <stoke/core/rng.hpp>

namespace stoke {

/// The order in which one epoch visits a dataset of `size` samples.
///
/// Shuffled orders are a balanced Feistel network over the smallest even power of two
/// that holds `size`, with cycle walking: positions that map outside `[0, size)` are mapped
/// again until they land inside, which keeps the map a bijection of `[0, size)`. Each epoch
/// has its own round keys, derived from (seed, epoch). Expected work per position is under
/// four network evaluations, since the domain is less than four times `size`.
class EpochOrder {
 public:
  /// The identity order (no shuffle) over `size` samples.
  explicit EpochOrder(std::size_t size) noexcept : size_(size) {}

  /// A shuffled order over `size` samples for `epoch` under `seed`.
  EpochOrder(std::size_t size, std::uint64_t seed, std::uint64_t epoch) noexcept
      : size_(size), shuffled_(size > 1) {
    if (!shuffled_) return;
    const int bits = static_cast<int>(std::bit_width(static_cast<std::uint64_t>(size - 1)));
    half_bits_ = (bits + 1) / 2;
    if (half_bits_ == 0) half_bits_ = 1;
    half_mask_ = (std::uint64_t{1} << half_bits_) - 1;
    const std::uint64_t epoch_key = mix64(seed ^ mix64(epoch + 0x5851F42D4C957F2Dull));
    for (int round = 0; round < kRounds; ++round) {
      round_keys_[round] =
          mix64(epoch_key + static_cast<std::uint64_t>(round) * 0x9E3779B97F4A7C15ull);
    }
  }

  /// Number of positions (and of samples).
  [[nodiscard]] std::size_t size() const noexcept { return size_; }

  /// Whether this order is shuffled.
  [[nodiscard]] bool shuffled() const noexcept { return shuffled_; }

  /// The dataset index at `position` (requires `position < size()`).
  [[nodiscard]] std::size_t operator()(std::size_t position) const noexcept {
    if (!shuffled_) return position;
    std::uint64_t x = position;
    do {
      x = encrypt(x);
    } while (x >= size_);
    return static_cast<std::size_t>(x);
  }

 private:
  static constexpr int kRounds = 6;

  [[nodiscard]] std::uint64_t encrypt(std::uint64_t x) const noexcept {
    std::uint64_t left = x >> half_bits_;
    std::uint64_t right = x & half_mask_;
    for (int round = 0; round < kRounds; ++round) {
      const std::uint64_t mixed = left ^ (mix64(right ^ round_keys_[round]) & half_mask_);
      left = right;
      right = mixed;
    }
    return (left << half_bits_) | right;
  }

  std::size_t size_ = 0;
  bool shuffled_ = false;
  int half_bits_ = 0;
  std::uint64_t half_mask_ = 0;
  std::uint64_t round_keys_[kRounds] = {};
};

}  // namespace stoke

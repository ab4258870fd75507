#pragma once
/// @file
/// Epoch order: a keyed bijection from positions to dataset indices, a pure function of
/// (seed, epoch). O(1) memory and O(1) expected time per position, for any dataset size.

#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <span>

#include <stoke/core/rng.hpp>

namespace stoke {

/// The order in which one epoch visits a dataset of `size` samples.
///
/// Shuffled orders are a Feistel network over the smallest power of two that holds `size`
/// (unbalanced when the bit count is odd: the halves swap sizes every round), with cycle
/// walking: positions that map outside `[0, size)` are mapped again until they land inside,
/// which keeps the map a bijection of `[0, size)`. Each epoch has its own round keys,
/// derived from (seed, epoch). Expected work per position is under two network evaluations,
/// since the domain is less than twice `size`.
class EpochOrder {
 public:
  /// The identity order (no shuffle) over `size` samples.
  explicit EpochOrder(std::size_t size) noexcept : size_(size) {}

  /// A shuffled order over `size` samples for `epoch` under `seed`.
  EpochOrder(std::size_t size, std::uint64_t seed, std::uint64_t epoch) noexcept
      : size_(size), shuffled_(size > 1) {
    if (!shuffled_) return;
    bits_ = static_cast<int>(std::bit_width(static_cast<std::uint64_t>(size - 1)));
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

  /// Replaces every position in `positions` (each `< size()`) by its dataset index, as
  /// `operator()` would. Faster per position: the network runs over blocks of positions at
  /// once, whose independent rounds the processor overlaps.
  void map(std::span<std::size_t> positions) const noexcept {
    if (!shuffled_) return;
    std::size_t done = 0;
    for (; done + kBlock <= positions.size(); done += kBlock) {
      std::array<std::uint64_t, kBlock> x{};
      for (std::size_t j = 0; j < kBlock; ++j) x[j] = positions[done + j];
      encrypt_each(x);
      for (std::size_t j = 0; j < kBlock; ++j) {
        while (x[j] >= size_) x[j] = encrypt(x[j]);  // cycle walking, rarely more than once
        positions[done + j] = static_cast<std::size_t>(x[j]);
      }
    }
    for (; done < positions.size(); ++done) positions[done] = (*this)(positions[done]);
  }

 private:
  static constexpr int kRounds = 6;
  static constexpr std::size_t kBlock = 8;  ///< positions `map` runs through the network at once

  /// One pass of the network over `bits_` bits. Each round xors the high part with a keyed
  /// hash of the low part, then rotates the low part to the top, so the parts trade places
  /// (and sizes, when `bits_` is odd); every round is a bijection, so the pass is one.
  [[nodiscard]] std::uint64_t encrypt(std::uint64_t x) const noexcept {
    encrypt_each(std::span(&x, 1));
    return x;
  }

  /// One pass of the network over each of `values`, round by round for all of them, so the
  /// rounds of different positions are independent work the processor overlaps.
  void encrypt_each(std::span<std::uint64_t> values) const noexcept {
    int low_bits = bits_ / 2;
    for (int round = 0; round < kRounds; ++round) {
      const int high_bits = bits_ - low_bits;
      const std::uint64_t low_mask = (std::uint64_t{1} << low_bits) - 1;
      const std::uint64_t high_mask = (std::uint64_t{1} << high_bits) - 1;
      const std::uint64_t key = round_keys_[round];
      for (std::uint64_t& value : values) {
        const std::uint64_t low = value & low_mask;
        const std::uint64_t high = (value >> low_bits) ^ (mix64(low ^ key) & high_mask);
        value = (low << high_bits) | high;
      }
      low_bits = high_bits;
    }
  }

  std::size_t size_ = 0;
  bool shuffled_ = false;
  int bits_ = 0;  // the network permutes [0, 2^bits_)
  std::uint64_t round_keys_[kRounds] = {};
};

}  // namespace stoke

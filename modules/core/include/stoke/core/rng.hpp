#pragma once
/// @file
/// Counter-based random numbers: Philox4x32-10 and a per-sample generator keyed by
/// (seed, epoch, dataset index), so augmentations are reproducible and never shared.

#include <array>
#include <cstdint>
#include <limits>

namespace stoke {

/// Philox4x32 with 10 rounds (Salmon et al., SC'11): a keyed bijection of 128-bit counters.
/// Stateless; the same (key, counter) always gives the same four words.
[[nodiscard]] constexpr std::array<std::uint32_t, 4> philox4x32(std::array<std::uint32_t, 4> ctr,
                                                                std::array<std::uint32_t, 2> key) {
  constexpr std::uint32_t kMul0 = 0xD2511F53u;
  constexpr std::uint32_t kMul1 = 0xCD9E8D57u;
  constexpr std::uint32_t kWeyl0 = 0x9E3779B9u;
  constexpr std::uint32_t kWeyl1 = 0xBB67AE85u;
  for (int round = 0; round < 10; ++round) {
    const std::uint64_t p0 = std::uint64_t{kMul0} * ctr[0];
    const std::uint64_t p1 = std::uint64_t{kMul1} * ctr[2];
    ctr = {static_cast<std::uint32_t>(p1 >> 32) ^ ctr[1] ^ key[0], static_cast<std::uint32_t>(p1),
           static_cast<std::uint32_t>(p0 >> 32) ^ ctr[3] ^ key[1], static_cast<std::uint32_t>(p0)};
    key = {key[0] + kWeyl0, key[1] + kWeyl1};
  }
  return ctr;
}

/// A 64-bit mixing function (the SplitMix64 finaliser): a bijection that spreads every input
/// bit over the output; used to derive keys.
[[nodiscard]] constexpr std::uint64_t mix64(std::uint64_t x) noexcept {
  x ^= x >> 30;
  x *= 0xBF58476D1CE4E5B9ull;
  x ^= x >> 27;
  x *= 0x94D049BB133111EBull;
  x ^= x >> 31;
  return x;
}

/// A random bit generator for one sample of one epoch: its stream is a pure function of
/// (seed, epoch, index), so it does not depend on which worker, device or rank draws it.
/// Under one seed every (epoch, index) pair has a stream of its own, for all 64 bits of
/// both: the counter holds the epoch's low 32 bits and the index, and the epoch's high 32
/// bits are mixed into the key (unchanged for epochs below 2^32). Each stream holds 2^34
/// words. Satisfies `std::uniform_random_bit_generator`.
class SampleRng {
 public:
  using result_type = std::uint32_t;

  /// The stream for dataset `index` in `epoch` under `seed`.
  constexpr SampleRng(std::uint64_t seed, std::uint64_t epoch, std::uint64_t index) noexcept
      : key_{key_word(seed, epoch, 0), key_word(seed, epoch, 32)},
        epoch_(static_cast<std::uint32_t>(epoch)),
        index_(index) {}

  static constexpr result_type min() noexcept { return 0; }
  static constexpr result_type max() noexcept { return std::numeric_limits<result_type>::max(); }

  /// The next 32 random bits.
  constexpr result_type operator()() noexcept {
    if (used_ == 4) {
      block_ = philox4x32({block_counter_++, epoch_, static_cast<std::uint32_t>(index_),
                           static_cast<std::uint32_t>(index_ >> 32)},
                          key_);
      used_ = 0;
    }
    return block_[used_++];
  }

  /// A uniform float in [0, 1) with 24 random bits.
  constexpr float uniform() noexcept { return static_cast<float>((*this)() >> 8) * 0x1.0p-24f; }

 private:
  /// 32 bits of the key from bit `shift` on: the seed's, xor the epoch's high half mixed
  /// (mix64(0) is 0, so epochs below 2^32 keep the seed as the key).
  static constexpr std::uint32_t key_word(std::uint64_t seed, std::uint64_t epoch,
                                          unsigned shift) noexcept {
    return static_cast<std::uint32_t>((seed ^ mix64(epoch >> 32U)) >> shift);
  }

  std::array<std::uint32_t, 2> key_;
  std::uint32_t epoch_;
  std::uint64_t index_;
  std::uint32_t block_counter_ = 0;
  std::array<std::uint32_t, 4> block_{};
  unsigned used_ = 4;
};

}  // namespace stoke

// Counter-based random numbers: Philox known answers, and per-sample streams.
#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <random>
#include <set>

#include <stoke/core/rng.hpp>

namespace {

// Known-answer vectors of Philox4x32-10 from the Random123 distribution (kat_vectors).
TEST(Philox, MatchesKnownAnswerForZeroCounterAndKey) {
  const auto out = stoke::philox4x32({0, 0, 0, 0}, {0, 0});
  EXPECT_EQ(out, (std::array<std::uint32_t, 4>{0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}));
}

TEST(Philox, MatchesKnownAnswerForAllOnes) {
  const auto out =
      stoke::philox4x32({0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff}, {0xffffffff, 0xffffffff});
  EXPECT_EQ(out, (std::array<std::uint32_t, 4>{0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}));
}

TEST(Philox, MatchesKnownAnswerForDigitsOfPi) {
  const auto out =
      stoke::philox4x32({0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344}, {0xa4093822, 0x299f31d0});
  EXPECT_EQ(out, (std::array<std::uint32_t, 4>{0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}));
}

TEST(SampleRng, IsAUniformRandomBitGenerator) {
  EXPECT_TRUE(std::uniform_random_bit_generator<stoke::SampleRng>);
}

TEST(SampleRng, SameKeyGivesSameStream) {
  stoke::SampleRng a(7, 3, 12345), b(7, 3, 12345);
  for (int i = 0; i < 100; ++i) ASSERT_EQ(a(), b());
}

TEST(SampleRng, SeedEpochAndIndexEachChangeTheStream) {
  const auto first = [](stoke::SampleRng rng) {
    return std::array{rng(), rng(), rng(), rng(), rng()};
  };
  const auto base = first(stoke::SampleRng(7, 3, 12345));
  EXPECT_NE(base, first(stoke::SampleRng(8, 3, 12345)));
  EXPECT_NE(base, first(stoke::SampleRng(7, 4, 12345)));
  EXPECT_NE(base, first(stoke::SampleRng(7, 3, 12346)));
  EXPECT_NE(base, first(stoke::SampleRng(7, 3, 12345 + (std::uint64_t{1} << 32))));
}

TEST(SampleRng, EpochsThatDifferOnlyAbove32BitsHaveStreamsOfTheirOwn) {
  const auto first = [](stoke::SampleRng rng) { return std::array{rng(), rng(), rng(), rng()}; };
  const std::uint64_t high = std::uint64_t{1} << 32;
  const auto base = first(stoke::SampleRng(7, 3, 12345));
  EXPECT_NE(base, first(stoke::SampleRng(7, 3 + high, 12345)));
  EXPECT_NE(first(stoke::SampleRng(7, 3 + high, 12345)),
            first(stoke::SampleRng(7, 3 + 2 * high, 12345)));
}

TEST(SampleRng, EpochsBelow2To32KeyPhiloxWithTheSeedAlone) {
  const std::uint64_t seed = 0x0123456789ABCDEFull;
  stoke::SampleRng rng(seed, 0xFFFFFFFFu, 0x1122334455667788ull);
  const auto block =
      stoke::philox4x32({0, 0xFFFFFFFFu, 0x55667788u, 0x11223344u}, {0x89ABCDEFu, 0x01234567u});
  EXPECT_EQ((std::array{rng(), rng(), rng(), rng()}), block);
}

TEST(SampleRng, UniformFloatsFillTheUnitInterval) {
  stoke::SampleRng rng(1, 0, 0);
  std::array<int, 10> bins{};
  for (int i = 0; i < 100000; ++i) {
    const float u = rng.uniform();
    ASSERT_GE(u, 0.0f);
    ASSERT_LT(u, 1.0f);
    ++bins[static_cast<int>(u * 10)];
  }
  for (const int count : bins) EXPECT_NEAR(count, 10000, 500);
}

TEST(SampleRng, WorksWithStandardDistributions) {
  stoke::SampleRng rng(5, 1, 2);
  std::uniform_int_distribution<int> die(1, 6);
  std::set<int> seen;
  for (int i = 0; i < 200; ++i) seen.insert(die(rng));
  EXPECT_EQ(seen.size(), 6u);
}

}  // namespace

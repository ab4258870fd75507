// Optimizers against updates computed by hand, exact resume from saved state, size checks;
// learning-rate schedules at chosen steps.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <ios>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include <stoke/learner/kernels/exact_arithmetic.hpp>
#include <stoke/learner/optim/adam.hpp>
#include <stoke/learner/optim/optimizer.hpp>
#include <stoke/learner/optim/schedule.hpp>
#include <stoke/learner/optim/sgd.hpp>
#include <stoke/learner/optim/shard_state.hpp>

namespace {

using ::testing::DoubleNear;
using ::testing::HasSubstr;
using ::testing::Pointwise;

static_assert(stoke::Optimizer<stoke::Sgd>);
static_assert(stoke::Optimizer<stoke::Adam>);
static_assert(stoke::ElementwiseOptimizer<stoke::Sgd> && stoke::ElementwiseOptimizer<stoke::Adam>);
static_assert(stoke::LrSchedule<stoke::ConstantLr>);
static_assert(stoke::LrSchedule<stoke::StepLr>);
static_assert(stoke::LrSchedule<stoke::CosineLr>);

const std::vector<float> kStart{1.0f, -2.0f, 0.5f};
const std::vector<float> kGrad1{0.5f, -1.0f, 2.0f};
const std::vector<float> kGrad2{-0.25f, 0.5f, 1.0f};

// Expected values below were computed by hand (in double) from the update rules.

TEST(Sgd, MomentumAndWeightDecayMatchHandComputedSteps) {
  stoke::Sgd sgd(0.1f, 0.9f, 0.01f);
  auto p = kStart;
  // v = g + 0.01 p = {0.51, -1.02, 2.005}; p -= 0.1 v.
  sgd.step(p, kGrad1, 0.1f);
  EXPECT_THAT(p, Pointwise(DoubleNear(1e-6), {0.949, -1.898, 0.2995}));
  // v = 0.9 v + g + 0.01 p = {0.21849, -0.43698, 2.807495}; p -= 0.05 v.
  sgd.step(p, kGrad2, 0.05f);
  EXPECT_THAT(p, Pointwise(DoubleNear(1e-6), {0.9380755, -1.876151, 0.15912525}));
  EXPECT_THAT(sgd.state(), Pointwise(DoubleNear(1e-6), {0.21849, -0.43698, 2.807495}));
}

TEST(Sgd, WithoutMomentumIsPlainGradientDescent) {
  stoke::Sgd sgd(0.5f);
  auto p = kStart;
  sgd.step(p, kGrad1);  // the base learning rate
  sgd.step(p, kGrad1);
  EXPECT_THAT(p, Pointwise(DoubleNear(1e-6), {0.5, -1.0, -1.5}));
}

TEST(Sgd, LoadedStateContinuesIdentically) {
  stoke::Sgd a(0.1f, 0.9f, 0.01f);
  auto pa = kStart;
  a.step(pa, kGrad1, 0.1f);
  stoke::Sgd b(0.1f, 0.9f, 0.01f);
  b.load_state(a.state());
  auto pb = pa;
  a.step(pa, kGrad2, 0.05f);
  b.step(pb, kGrad2, 0.05f);
  EXPECT_EQ(pa, pb);
  EXPECT_EQ(a.state(), b.state());
}

TEST(Sgd, RefusesMismatchedSizesNamingBoth) {
  stoke::Sgd sgd(0.1f, 0.9f);
  auto p = kStart;
  const std::vector<float> five(5, 1.0f);
  try {
    sgd.step(p, five, 0.1f);
    FAIL() << "expected stoke::UsageError";
  } catch (const stoke::UsageError& e) {
    EXPECT_THAT(e.what(), HasSubstr("5"));
    EXPECT_THAT(e.what(), HasSubstr("3"));
  }
  sgd.load_state(std::vector<float>(4, 0.0f));
  EXPECT_THROW(sgd.step(p, kGrad1, 0.1f), stoke::UsageError);
}

TEST(Adam, BiasCorrectionAndDecoupledDecayMatchHandComputedSteps) {
  stoke::Adam adam(0.9f, 0.999f, 1e-8f, 0.1f);
  auto p = kStart;
  // t = 1: bias-corrected m / sqrt(v) = sign(g), so p = p (1 - 0.01) - 0.1 sign(g).
  adam.step(p, kGrad1, 0.1f);
  EXPECT_THAT(p, Pointwise(DoubleNear(1e-6), {0.890000002, -1.880000001, 0.3950000005}));
  // t = 2: m = 0.9 m + 0.1 g, v = 0.999 v + 0.001 g^2, corrected by 1 - 0.9^2, 1 - 0.999^2.
  adam.step(p, kGrad2, 0.05f);
  EXPECT_THAT(p, Pointwise(DoubleNear(1e-6),
                           {0.8722331503439232, -1.8572831491804516, 0.3464160188517552}));
  EXPECT_EQ(adam.steps(), 2u);
}

TEST(Adam, LoadedStateContinuesIdentically) {
  stoke::Adam a(0.9f, 0.99f, 1e-6f, 0.05f);
  auto pa = kStart;
  a.step(pa, kGrad1, 0.1f);
  a.step(pa, kGrad2, 0.1f);
  stoke::Adam b(0.9f, 0.99f, 1e-6f, 0.05f);
  b.load_state(a.state());
  EXPECT_EQ(b.steps(), 2u);
  auto pb = pa;
  a.step(pa, kGrad1, 0.02f);
  b.step(pb, kGrad1, 0.02f);
  EXPECT_EQ(pa, pb);
  EXPECT_EQ(a.state(), b.state());
}

TEST(Adam, StateKeepsLargeStepCountsExact) {
  const std::uint64_t steps = (std::uint64_t{1} << 24) * 3 + 5;
  stoke::Adam adam;
  adam.load_state(std::vector<float>{5.0f, 3.0f, 0.1f, 0.2f});
  EXPECT_EQ(adam.steps(), steps);
  EXPECT_EQ(adam.state(), (std::vector<float>{5.0f, 3.0f, 0.1f, 0.2f}));
  EXPECT_THROW(adam.load_state(std::vector<float>{0.5f, 0.0f}), stoke::UsageError);
  EXPECT_THROW(adam.load_state(std::vector<float>{0.0f, 0.0f, 1.0f}), stoke::UsageError);
}

TEST(Adam, StepsEveryParameterTheSameWhereverItsSpanStartsOrEnds) {
  // The sharded step gives each device a span that starts anywhere; a rank of an MPI job steps
  // the whole. (With Eigen's packet square root, which rounds otherwise than the scalar one,
  // an element that took the scalar path in one split and a packet in another drifted apart;
  // visible here with parameters at 0, where the update is not lost in the parameter's
  // rounding.)
  constexpr std::size_t kCount = 2500;
  std::vector<float> gradients(kCount);
  for (std::size_t i = 0; i < kCount; ++i) {
    gradients[i] = 1e-3f * static_cast<float>((i * 7919) % 2003) - 1.0f;
  }
  const auto run = [&](std::size_t storage_offset, std::vector<std::size_t> cuts) {
    std::vector<float> storage(kCount + storage_offset, 0.0f);
    const auto parameters = std::span(storage).subspan(storage_offset, kCount);
    cuts.insert(cuts.begin(), 0);
    cuts.push_back(kCount);
    std::vector<stoke::Adam> shards(cuts.size() - 1);
    for (int step = 0; step < 3; ++step) {
      for (std::size_t k = 0; k + 1 < cuts.size(); ++k) {
        const std::size_t size = cuts[k + 1] - cuts[k];
        shards[k].step(parameters.subspan(cuts[k], size),
                       std::span<const float>(gradients).subspan(cuts[k], size), 1e-2f);
      }
    }
    return std::vector<float>(parameters.begin(), parameters.end());
  };
  const std::vector<float> whole = run(0, {});
  for (std::size_t offset : {0, 1, 3}) {
    for (const auto& cuts :
         std::vector<std::vector<std::size_t>>{{1}, {7}, {13, 1300}, {833, 1666}, {1024, 2049}}) {
      EXPECT_EQ(run(offset, cuts), whole)
          << "storage offset " << offset << ", first cut " << cuts[0];
    }
  }
}

TEST(Adam, RefusesMismatchedSizesNamingBoth) {
  stoke::Adam adam;
  auto p = kStart;
  const std::vector<float> five(5, 1.0f);
  try {
    adam.step(p, five, 0.1f);
    FAIL() << "expected stoke::UsageError";
  } catch (const stoke::UsageError& e) {
    EXPECT_THAT(e.what(), HasSubstr("5"));
    EXPECT_THAT(e.what(), HasSubstr("3"));
  }
  adam.load_state(std::vector<float>{1.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f});  // two parameters
  EXPECT_THROW(adam.step(p, kGrad1, 0.1f), stoke::UsageError);
}

TEST(ConstantLr, IsTheSameAtEveryStep) {
  const stoke::ConstantLr lr{0.25f};
  EXPECT_EQ(lr(0), 0.25f);
  EXPECT_EQ(lr(1'000'000), 0.25f);
}

TEST(StepLr, DecaysByGammaEveryStepSize) {
  const stoke::StepLr lr{.base = 0.1f, .gamma = 0.5f, .step_size = 10};
  EXPECT_FLOAT_EQ(lr(0), 0.1f);
  EXPECT_FLOAT_EQ(lr(9), 0.1f);
  EXPECT_FLOAT_EQ(lr(10), 0.05f);
  EXPECT_FLOAT_EQ(lr(25), 0.025f);
}

TEST(CosineLr, WarmsUpLinearlyThenDecaysToTheMinimumAndStays) {
  const stoke::CosineLr lr{.base = 0.1f, .minimum = 0.01f, .total_steps = 110, .warmup_steps = 10};
  EXPECT_FLOAT_EQ(lr(0), 0.01f);  // warmup: base * (step + 1) / warmup
  EXPECT_FLOAT_EQ(lr(4), 0.05f);
  EXPECT_FLOAT_EQ(lr(9), 0.1f);
  EXPECT_FLOAT_EQ(lr(10), 0.1f);  // cosine starts at base
  EXPECT_FLOAT_EQ(lr(35), 0.08681980515339464f);
  EXPECT_FLOAT_EQ(lr(60), 0.055f);  // half way: the mean of base and minimum
  EXPECT_FLOAT_EQ(lr(85), 0.023180194846605363f);
  EXPECT_FLOAT_EQ(lr(109), 0.010022204783542078f);
  EXPECT_EQ(lr(110), 0.01f);  // end, and clamped after
  EXPECT_EQ(lr(1'000'000), 0.01f);
}

TEST(CosineLr, WithoutWarmupStartsAtBase) {
  const stoke::CosineLr lr{.base = 1.0f, .minimum = 0.0f, .total_steps = 4};
  EXPECT_FLOAT_EQ(lr(0), 1.0f);
  EXPECT_FLOAT_EQ(lr(2), 0.5f);
  EXPECT_EQ(lr(4), 0.0f);
}

}  // namespace

namespace {

TEST(ShardState, SteppingTheShardsAloneGivesTheWholeStep) {
  const std::vector<float> grads2{0.25f, 1.5f, -0.75f, 2.0f, -1.0f};
  const std::vector<float> start{1.0f, -2.0f, 0.5f, 3.0f, -0.25f};
  stoke::Adam whole(0.9f, 0.99f, 1e-6f, 0.05f);
  auto p = start;
  whole.step(p, grads2, 0.1f);
  const std::vector<float> state_after_one = whole.state();
  auto q = p;
  whole.step(p, grads2, 0.05f);
  // Two shards (2 + 3 parameters), each with its cut of the state, take the same second step.
  for (std::size_t part = 0; part < 2; ++part) {
    const stoke::ParameterShard shard = stoke::parameter_shard(5, part, 2);
    stoke::Adam alone(0.9f, 0.99f, 1e-6f, 0.05f);
    alone.load_state(stoke::shard_state<stoke::Adam>(state_after_one, 5, shard));
    alone.step(std::span(q).subspan(shard.begin, shard.size()),
               std::span(grads2).subspan(shard.begin, shard.size()), 0.05f);
    EXPECT_EQ(alone.steps(), 2u);
  }
  // Bit for bit: every element rounds alike on whatever path and in whatever shard.
  EXPECT_EQ(q, p);
  EXPECT_NE(q, start);
}

TEST(ShardState, CutsTheHeaderAndEveryArray) {
  // Adam: {steps low, steps high, m0..m3, v0..v3}.
  const std::vector<float> state{7, 0, 10, 11, 12, 13, 20, 21, 22, 23};
  EXPECT_EQ(stoke::shard_state<stoke::Adam>(state, 4, {.begin = 1, .end = 3}),
            (std::vector<float>{7, 0, 11, 12, 21, 22}));
  // Sgd: the velocity alone; an optimizer that has not stepped has the header alone.
  EXPECT_EQ(stoke::shard_state<stoke::Sgd>(std::vector<float>{1, 2, 3}, 3, {.begin = 2, .end = 3}),
            (std::vector<float>{3}));
  EXPECT_EQ(stoke::shard_state<stoke::Adam>(std::vector<float>{0, 0}, 4, {.begin = 0, .end = 2}),
            (std::vector<float>{0, 0}));
}

TEST(ShardState, RefusesAStateOfTheWrongSizeNamingTheSizes) {
  try {
    (void)stoke::shard_state<stoke::Adam>(std::vector<float>(9), 4, {.begin = 0, .end = 2});
    FAIL() << "expected stoke::UsageError";
  } catch (const stoke::UsageError& e) {
    EXPECT_THAT(e.what(), HasSubstr("state of 9 floats"));
    EXPECT_THAT(e.what(), HasSubstr("2 + 2 x 4 parameters"));
  }
}

}  // namespace

// The element-wise optimizers give the same bits whatever the instruction set (DESIGN.md,
// "Semantics" 9): their packet path (SSE2, AVX, AVX-512 or NEON, whichever this build has) must
// equal, bit for bit, a scalar reference that takes `std::sqrt` and rounds every operation
// alone, in the same order. The reference is the same on every instruction set (IEEE 754
// rounds each operation one way), so equality here in every build is equality between builds;
// the checksum test pins the bits themselves, so a build with `-march=native` (or for another
// machine) that computes anything else fails against the same constant.
namespace {

/// `x` rounded to a float on its own: a `volatile` round trip, which no compiler fuses with
/// the operation that consumes it, whatever `-ffp-contract` says.
float alone(float x) {
  volatile float stored = x;
  return stored;
}

/// One element of Adam's update with `std::sqrt`, every operation rounded alone, in the order
/// `stoke::adam_update` documents.
void adam_reference(const stoke::AdamStepFactors& f, float& p, float& m, float& v, float g) {
  m = alone(alone(f.beta1 * m) + alone(alone(1.0f - f.beta1) * g));
  v = alone(alone(f.beta2 * v) + alone(alone(1.0f - f.beta2) * alone(g * g)));
  const float root = alone(std::sqrt(v));
  const float denominator = alone(alone(root / f.root_correction2) + f.epsilon);
  const float change = alone(alone(f.learning_rate * alone(m / f.correction1)) / denominator);
  p = alone(alone(p * f.decay) - change);
}

/// One element of SGD's update, every operation rounded alone, in `stoke::sgd_update`'s order.
void sgd_reference(float momentum, float weight_decay, float rate, float& p, float& v, float g) {
  v = alone(alone(momentum * v) + alone(g + alone(weight_decay * p)));
  p = alone(p - alone(rate * v));
}

/// SplitMix64: the same numbers on every platform (unlike the standard distributions).
struct Bits {
  std::uint64_t state;
  std::uint64_t next() {
    std::uint64_t z = (state += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
  }
  /// A finite float: a third with any exponent (zero, denormals and the largest included), a
  /// third with a denormal or tiny exponent, a third near 1; random sign and mantissa.
  float any() {
    const std::uint64_t r = next();
    std::uint32_t exponent = 0;
    switch (r % 3) {
      case 0:
        exponent = static_cast<std::uint32_t>((r >> 8) % 255);
        break;  // 0 .. 254
      case 1:
        exponent = static_cast<std::uint32_t>((r >> 8) % 24);
        break;  // denormal, tiny
      default:
        exponent = 112 + static_cast<std::uint32_t>((r >> 8) % 32);  // 2^-15 .. 2^16
    }
    const auto sign = static_cast<std::uint32_t>((r >> 16) & 1U) << 31;
    const auto mantissa = static_cast<std::uint32_t>(r >> 32) & 0x7FFFFFU;
    return std::bit_cast<float>(sign | (exponent << 23) | mantissa);
  }
  /// A finite float of at least zero (a second moment).
  float magnitude() { return std::fabs(any()); }
  /// A float in (0, 1) (a decay rate).
  float unit() { return static_cast<float>((next() >> 40) + 1) / 16777218.0f; }
};

/// Whether `a` and `b` have the same bits (any two NaNs count as equal: which NaN an invalid
/// operation gives is not part of the contract).
bool same_bits(float a, float b) {
  return std::bit_cast<std::uint32_t>(a) == std::bit_cast<std::uint32_t>(b) ||
         (std::isnan(a) && std::isnan(b));
}

/// Hyperparameters to test with: the usual ones at steps 1 and 1000, and random ones (tiny and
/// denormal epsilons, rates of any size).
std::vector<stoke::AdamStepFactors> adam_factor_sets() {
  std::vector<stoke::AdamStepFactors> sets{
      {.beta1 = 0.9f,
       .beta2 = 0.999f,
       .epsilon = 1e-8f,
       .decay = 1.0f,
       .learning_rate = 1e-3f,
       .correction1 = 0.1f,
       .root_correction2 = 0.0316227766f},
      {.beta1 = 0.9f,
       .beta2 = 0.99f,
       .epsilon = 1e-6f,
       .decay = 0.9995f,
       .learning_rate = 0.05f,
       .correction1 = 1.0f,
       .root_correction2 = 0.99997f},
  };
  Bits bits{.state = 29};
  for (int k = 0; k < 6; ++k) {
    sets.push_back({.beta1 = bits.unit(),
                    .beta2 = bits.unit(),
                    .epsilon = k % 2 == 0 ? 1e-40f : bits.magnitude(),
                    .decay = bits.unit(),
                    .learning_rate = bits.magnitude(),
                    .correction1 = bits.unit(),
                    .root_correction2 = bits.unit()});
  }
  return sets;
}

TEST(ExactArithmetic, PacketSquareRootIsCorrectlyRoundedOverEveryRangeOfFloats) {
  // Every 509th bit pattern of the non-negative floats (zero, denormals, normals, infinity
  // and NaNs), then every denormal's neighbourhood of zero one by one.
  std::vector<float> values;
  for (std::uint64_t bits = 0; bits <= 0x7FFFFFFFULL; bits += 509) {
    values.push_back(std::bit_cast<float>(static_cast<std::uint32_t>(bits)));
  }
  for (std::uint32_t bits = 0; bits < 4096; ++bits) values.push_back(std::bit_cast<float>(bits));
  while (values.size() % stoke::exact::packet_floats != 0) values.push_back(1.0f);
  std::vector<float> roots(values.size());
  for (std::size_t i = 0; i < values.size(); i += stoke::exact::packet_floats) {
    using stoke::exact::Packet;
    stoke::exact::store(roots.data() + i,
                        stoke::exact::sqrt(stoke::exact::load<Packet>(&values[i])));
  }
  for (std::size_t i = 0; i < values.size(); ++i) {
    ASSERT_TRUE(same_bits(roots[i], std::sqrt(values[i])))
        << stoke::exact::packet_isa << ": sqrt of bits 0x" << std::hex
        << std::bit_cast<std::uint32_t>(values[i]);
  }
}

TEST(Adam, PacketAndScalarPathsEqualTheStdSqrtReferenceBitForBit) {
  constexpr std::size_t kCount = (1 << 16) + 5;  // whole packets of every width, and a tail
  std::size_t nans = 0;
  for (const stoke::AdamStepFactors& f : adam_factor_sets()) {
    Bits bits{.state = std::bit_cast<std::uint32_t>(f.beta1)};
    std::vector<float> p(kCount), m(kCount), v(kCount), g(kCount);
    for (std::size_t i = 0; i < kCount; ++i) {
      p[i] = bits.any();
      m[i] = bits.any();
      v[i] = bits.magnitude();
      g[i] = bits.any();
    }
    auto want_p = p, want_m = m, want_v = v;
    for (std::size_t i = 0; i < kCount; ++i)
      adam_reference(f, want_p[i], want_m[i], want_v[i], g[i]);
    // The packet path over the whole packets, then the scalar path over the tail.
    auto packet_p = p, packet_m = m, packet_v = v;
    const std::size_t whole = kCount - kCount % stoke::exact::packet_floats;
    stoke::adam_update<stoke::exact::Packet>(whole, f, packet_p.data(), packet_m.data(),
                                             packet_v.data(), g.data());
    stoke::adam_update<float>(kCount - whole, f, packet_p.data() + whole, packet_m.data() + whole,
                              packet_v.data() + whole, g.data() + whole);
    // The scalar path throughout.
    auto scalar_p = p, scalar_m = m, scalar_v = v;
    stoke::adam_update<float>(kCount, f, scalar_p.data(), scalar_m.data(), scalar_v.data(),
                              g.data());
    for (std::size_t i = 0; i < kCount; ++i) {
      nans += std::isnan(want_p[i]) ? 1 : 0;
      ASSERT_TRUE(same_bits(packet_p[i], want_p[i]) && same_bits(packet_m[i], want_m[i]) &&
                  same_bits(packet_v[i], want_v[i]))
          << stoke::exact::packet_isa << " at " << i << std::hexfloat << ": p " << packet_p[i]
          << " vs " << want_p[i] << ", v " << packet_v[i] << " vs " << want_v[i];
      ASSERT_TRUE(same_bits(scalar_p[i], want_p[i]) && same_bits(scalar_m[i], want_m[i]) &&
                  same_bits(scalar_v[i], want_v[i]))
          << "scalar at " << i << std::hexfloat << ": p " << scalar_p[i] << " vs " << want_p[i];
    }
  }
  EXPECT_LT(nans, kCount) << "the values should mostly stay finite";
}

TEST(Adam, StepEqualsTheStdSqrtReferenceBitForBitAtEveryStep) {
  constexpr std::size_t kCount = 4099;
  const float beta1 = 0.9f, beta2 = 0.999f, epsilon = 1e-8f, weight_decay = 0.01f;
  stoke::Adam adam(beta1, beta2, epsilon, weight_decay);
  Bits bits{.state = 7};
  std::vector<float> p(kCount), m(kCount, 0.0f), v(kCount, 0.0f);
  for (float& x : p) x = bits.any();
  auto got = p;
  for (int step = 1; step <= 4; ++step) {
    std::vector<float> g(kCount);
    for (float& x : g) x = bits.any();
    const float rate = 1e-3f * static_cast<float>(step);
    const double t = step;
    const stoke::AdamStepFactors f{
        .beta1 = beta1,
        .beta2 = beta2,
        .epsilon = epsilon,
        .decay = alone(1.0f - alone(rate * weight_decay)),
        .learning_rate = rate,
        .correction1 = static_cast<float>(1.0 - std::pow(static_cast<double>(beta1), t)),
        .root_correction2 =
            static_cast<float>(std::sqrt(1.0 - std::pow(static_cast<double>(beta2), t)))};
    for (std::size_t i = 0; i < kCount; ++i) adam_reference(f, p[i], m[i], v[i], g[i]);
    adam.step(got, g, rate);
    for (std::size_t i = 0; i < kCount; ++i) {
      ASSERT_TRUE(same_bits(got[i], p[i])) << "step " << step << " at " << i;
    }
  }
  const auto state = adam.state();
  for (std::size_t i = 0; i < kCount; ++i) {
    ASSERT_TRUE(same_bits(state[2 + i], m[i]) && same_bits(state[2 + kCount + i], v[i]))
        << "moments at " << i;
  }
}

TEST(Adam, UpdateBitsAreTheSameOnEveryInstructionSet) {
  // A checksum of the packet path's bits over random values, computed once with the scalar
  // reference: every build (SSE2, AVX2 and FMA, AVX-512, NEON) must give it.
  constexpr std::size_t kCount = 10007;
  const stoke::AdamStepFactors f = adam_factor_sets()[0];
  Bits bits{.state = 2026};
  std::vector<float> p(kCount), m(kCount), v(kCount), g(kCount);
  for (std::size_t i = 0; i < kCount; ++i) {
    p[i] = bits.any();
    m[i] = bits.any();
    v[i] = bits.magnitude();
    g[i] = bits.any();
  }
  for (int step = 0; step < 3; ++step) {
    const std::size_t whole = stoke::exact::whole_packets(kCount);
    stoke::adam_update<stoke::exact::Packet>(whole, f, p.data(), m.data(), v.data(), g.data());
    stoke::adam_update<float>(kCount - whole, f, p.data() + whole, m.data() + whole,
                              v.data() + whole, g.data() + whole);
  }
  std::uint64_t hash = 0xCBF29CE484222325ULL;  // FNV-1a over the bits, NaNs as one value
  for (const auto* array : {&p, &m, &v}) {
    for (float x : *array) {
      const std::uint32_t word = std::isnan(x) ? 0x7FC00000U : std::bit_cast<std::uint32_t>(x);
      for (int byte = 0; byte < 4; ++byte) {
        hash = (hash ^ ((word >> (8 * byte)) & 0xFFU)) * 0x100000001B3ULL;
      }
    }
  }
  EXPECT_EQ(hash, 0x66E3456CC0B8FB01ULL) << "on " << stoke::exact::packet_isa;
}

TEST(Sgd, PacketAndScalarPathsEqualTheReferenceBitForBit) {
  constexpr std::size_t kCount = (1 << 16) + 7;
  Bits bits{.state = 11};
  for (int set = 0; set < 4; ++set) {
    const float momentum = set == 0 ? 0.9f : bits.unit();
    const float weight_decay = set == 0 ? 1e-4f : bits.magnitude();
    const float rate = set == 0 ? 0.1f : bits.magnitude();
    std::vector<float> p(kCount), v(kCount), g(kCount);
    for (std::size_t i = 0; i < kCount; ++i) {
      p[i] = bits.any();
      v[i] = bits.any();
      g[i] = bits.any();
    }
    auto want_p = p, want_v = v;
    for (std::size_t i = 0; i < kCount; ++i) {
      sgd_reference(momentum, weight_decay, rate, want_p[i], want_v[i], g[i]);
    }
    auto scalar_p = p, scalar_v = v;
    stoke::sgd_update<float>(kCount, momentum, weight_decay, rate, scalar_p.data(), scalar_v.data(),
                             g.data());
    stoke::Sgd sgd(rate, momentum, weight_decay);
    sgd.load_state(v);
    sgd.step(p, g, rate);  // packets, then the tail one float at a time
    const auto velocity = sgd.state();
    for (std::size_t i = 0; i < kCount; ++i) {
      ASSERT_TRUE(same_bits(p[i], want_p[i]) && same_bits(velocity[i], want_v[i]))
          << stoke::exact::packet_isa << " at " << i << std::hexfloat << ": p " << p[i] << " vs "
          << want_p[i];
      ASSERT_TRUE(same_bits(scalar_p[i], want_p[i]) && same_bits(scalar_v[i], want_v[i]))
          << "scalar at " << i;
    }
  }
}

}  // namespace

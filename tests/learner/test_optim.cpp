// Optimizers against updates computed by hand, exact resume from saved state, size checks;
// learning-rate schedules at chosen steps.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

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
  // the whole. Eigen's packet square root rounds otherwise than the scalar one, so an element
  // that took the scalar path in one split and a packet in another drifted apart (visible
  // here with parameters at 0, where the update is not lost in the parameter's rounding).
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
    const stoke::Shard shard = stoke::shard_of(5, part, 2);
    stoke::Adam alone(0.9f, 0.99f, 1e-6f, 0.05f);
    alone.load_state(stoke::shard_state<stoke::Adam>(state_after_one, 5, shard));
    alone.step(std::span(q).subspan(shard.begin, shard.size()),
               std::span(grads2).subspan(shard.begin, shard.size()), 0.05f);
    EXPECT_EQ(alone.steps(), 2u);
  }
  // Within rounding: the packet square root may differ from the scalar one in the last bit.
  EXPECT_THAT(q, Pointwise(testing::FloatNear(1e-6f), p));
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

// The learner's device step reads its changing scalars from the device: the epoch's step table
// (rates, Adam's decay and bias corrections, the history slot at a counter the step advances)
// and the batch's real rows. On Vulkan a step then pushes the same constants every step, also
// at a padded last batch and with a schedule that changes the rate every step; no device buffer
// is made after the first epoch; and the bits are those of the scalars given step by step.
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <latch>
#include <memory>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#include <stoke/learner.hpp>
#include <stoke/stoke.hpp>
#include <stoke/vulkan.hpp>

#include "stoke_test_files.hpp"
#include "toy_images.hpp"
#include "vulkan_toy_training.hpp"
#include "vulkan_validation.hpp"

namespace {

namespace vk = stoke::vulkan;
using stoke::testing::ToyImages;
using StepTableTest = stoke::testing::VulkanTest;
using Classifier = stoke::SoftmaxClassifier<vk::Backend, vk::ImageBatch>;
using stoke::testing::expect_resumed_exactly;
using stoke::testing::kToyModelSeed;
using stoke::testing::shader_train_loader;
using stoke::testing::shader_valid_loader;
constexpr std::size_t kEpochs = 2;

/// A rate that changes every step: a warmup, then a cosine decay.
const stoke::CosineLr kSchedule{
    .base = 0.1f, .minimum = 0.01f, .total_steps = 30, .warmup_steps = 4};

/// 100 images in batches of 8, padded: every epoch ends with a batch of 4 real rows.

/// The push constants of the step's shaders on one device, after a step.
struct Pushes {
  std::vector<std::byte> optimizer, forward, gradients;
  bool operator==(const Pushes&) const = default;
};

/// What a run of `kEpochs` epochs through `DeviceReplica`s gave.
struct Outcome {
  std::vector<std::vector<stoke::StepOutput>> epochs;  ///< device 0's step sums, every epoch
  std::vector<stoke::StepOutput> valid;                ///< device 0's validation sums
  std::vector<float> parameters;                       ///< device 0's, at the end
  std::vector<float> state;                            ///< the whole optimizer state
  std::vector<Pushes> pushes;                          ///< device 0's, after every step
  std::vector<std::uint64_t> buffers_made;  ///< device buffers each thread made in the last epoch
  std::uint64_t first_buffers_made = 0;     ///< those device 0 made in the first
};

/// `kEpochs` epochs of the classifier on `count` devices, each device taking its batches and
/// rates as the learner does: with the epoch's rates up front (`tabled`) or one a step.
template <class Optim>
Outcome run(const Optim& optimizer, std::size_t count, bool tabled) {
  const ToyImages train(100), valid(40, 9);
  const auto devices = vk::Backend::devices(count);
  const auto collective = vk::Backend::make_collective(devices);
  const auto train_parts = stoke::split(shader_train_loader(train, stoke::Remainder::pad), devices);
  const auto valid_parts = stoke::split(shader_valid_loader(valid, 16), devices);
  const Classifier model(devices[0], ToyImages::kPixels, ToyImages::kClasses, kToyModelSeed);
  Outcome result;
  result.buffers_made.assign(count, 0);
  std::vector<std::thread> threads;
  std::latch made(static_cast<std::ptrdiff_t>(count));
  for (std::size_t d = 0; d < count; ++d) {
    threads.emplace_back([&, d] {
      stoke::detail::DeviceReplica<vk::Backend, Classifier, Optim> replica(model, optimizer, d,
                                                                           devices, *collective);
      made.arrive_and_wait();
      vk::TrainingKernels& kernels = vk::TrainingKernels::of(devices[d]);
      vk::SoftmaxPipelines& softmax = vk::SoftmaxPipelines::of(devices[d]);
      auto train_part = train_parts[d];
      auto valid_part = valid_parts[d];
      std::size_t global_step = 0;
      for (std::size_t epoch = 0; epoch < kEpochs; ++epoch) {
        std::vector<stoke::Batch<vk::ImageBatch>> batches, checks;
        train_part.set_epoch(epoch);
        for (auto& batch : train_part.iter()) batches.push_back(std::move(batch));
        for (auto& batch : valid_part.iter()) checks.push_back(std::move(batch));
        std::vector<float> rates(batches.size());
        for (std::size_t s = 0; s < rates.size(); ++s) rates[s] = kSchedule(global_step + s);
        const std::uint64_t before = vk::device_buffers_made();
        if (tabled) {
          replica.begin_epoch(batches.size(), rates);
        } else {
          replica.begin_epoch(batches.size());
        }
        for (std::size_t s = 0; s < batches.size(); ++s) {
          replica.train(batches[s]);
          replica.reduce_and_step(rates[s]);
          ++global_step;
          if (d == 0) {
            const auto& step = std::is_same_v<Optim, stoke::Adam> ? kernels.adam : kernels.sgd;
            result.pushes.push_back(
                {step.last_push(), softmax.forward.last_push(), softmax.gradients.last_push()});
          }
        }
        for (const auto& batch : checks) replica.valid(batch);
        const stoke::StepOutput valid_sums = replica.take_valid_sums();
        const auto steps = replica.epoch_steps();
        result.buffers_made[d] = vk::device_buffers_made() - before;
        if (d == 0 && epoch == 0) result.first_buffers_made = result.buffers_made[d];
        if (d == 0) {
          result.epochs.emplace_back(steps.begin(), steps.end());
          result.valid.push_back(valid_sums);
        }
      }
      std::vector<float> state = replica.whole_optimizer_state();  // every device calls it
      if (d == 0) {
        result.parameters = replica.parameters();
        result.state = std::move(state);
      }
    });
  }
  for (auto& thread : threads) thread.join();
  return result;
}

void expect_same_sums(const std::vector<stoke::StepOutput>& actual,
                      const std::vector<stoke::StepOutput>& expected) {
  ASSERT_EQ(actual.size(), expected.size());
  for (std::size_t s = 0; s < actual.size(); ++s) {
    EXPECT_EQ(actual[s].loss_sum, expected[s].loss_sum) << "step " << s;
    EXPECT_EQ(actual[s].count, expected[s].count) << "step " << s;
    EXPECT_EQ(actual[s].correct, expected[s].correct) << "step " << s;
  }
}

/// The tabled run and the one given its scalars step by step train to the same bits.
template <class Optim>
void expect_table_bits(const Optim& optimizer, std::size_t count) {
  const Outcome tabled = run(optimizer, count, true);
  const Outcome given = run(optimizer, count, false);
  ASSERT_EQ(tabled.epochs.size(), kEpochs);
  ASSERT_EQ(given.epochs.size(), kEpochs);
  for (std::size_t e = 0; e < kEpochs; ++e) {
    ASSERT_FALSE(tabled.epochs[e].empty());
    EXPECT_LT(tabled.epochs[e].back().count, tabled.epochs[e].front().count);  // padded last
    expect_same_sums(tabled.epochs[e], given.epochs[e]);
  }
  expect_same_sums(tabled.valid, given.valid);
  EXPECT_EQ(tabled.parameters, given.parameters);
  EXPECT_EQ(tabled.state, given.state);
}

TEST_F(StepTableTest, AStepPushesTheSameConstantsEveryStepAtChangingRatesAndAPaddedBatch) {
  const Outcome tabled = run(stoke::Adam(0.9f, 0.99f, 1e-6f, 0.01f), 1, true);
  ASSERT_GT(tabled.pushes.size(), 20u);
  for (std::size_t s = 1; s < tabled.pushes.size(); ++s) {
    EXPECT_EQ(tabled.pushes[s], tabled.pushes[0]) << "step " << s;
  }
  std::uint32_t slot = 0;  // the fourth word: the history slot, read on the device
  std::memcpy(&slot, tabled.pushes[0].optimizer.data() + 3 * sizeof(std::uint32_t), sizeof slot);
  EXPECT_EQ(slot, stoke::read_on_device);
  // What is compared changes where a step is given its scalars: the rate and the slot.
  const Outcome given = run(stoke::Adam(0.9f, 0.99f, 1e-6f, 0.01f), 1, false);
  ASSERT_GT(given.pushes.size(), 1u);
  EXPECT_NE(given.pushes[1].optimizer, given.pushes[0].optimizer);
  const Outcome sgd = run(stoke::Sgd(0.1f, 0.9f), 1, true);
  for (std::size_t s = 1; s < sgd.pushes.size(); ++s) {
    EXPECT_EQ(sgd.pushes[s], sgd.pushes[0]) << "step " << s;
  }
}

TEST_F(StepTableTest, NoDeviceBufferIsMadeAfterTheFirstEpoch) {
  for (const std::size_t count : {1u, 2u}) {
    const Outcome tabled = run(stoke::Adam(0.9f, 0.99f, 1e-6f, 0.01f), count, true);
    EXPECT_GT(tabled.first_buffers_made, 0u);  // the counter counts: the first epoch makes them
    for (std::size_t d = 0; d < count; ++d) {
      EXPECT_EQ(tabled.buffers_made[d], 0u) << "device " << d << " of " << count;
    }
  }
}

TEST_F(StepTableTest, TheTableGivesTheBitsOfScalarsGivenStepByStepOnOneDevice) {
  expect_table_bits(stoke::Adam(0.9f, 0.99f, 1e-6f, 0.01f), 1);
  expect_table_bits(stoke::Sgd(0.1f, 0.9f, 0.001f), 1);
}

TEST_F(StepTableTest, TheTableGivesTheBitsOfScalarsGivenStepByStepOnTwoAndThreeDevices) {
  expect_table_bits(stoke::Adam(0.9f, 0.99f, 1e-6f, 0.01f), 2);
  expect_table_bits(stoke::Sgd(0.1f, 0.9f, 0.001f), 3);
}

TEST_F(StepTableTest, AStepAtARateOtherThanItsEpochsTableIsRefused) {
  const ToyImages train(100);
  const auto devices = vk::Backend::devices(1);
  const auto collective = vk::Backend::make_collective(devices);
  auto loader = shader_train_loader(train, stoke::Remainder::pad);
  const Classifier model(devices[0], ToyImages::kPixels, ToyImages::kClasses, kToyModelSeed);
  stoke::detail::DeviceReplica<vk::Backend, Classifier, stoke::Sgd> replica(
      model, stoke::Sgd(0.1f), 0, devices, *collective);
  const float rates[] = {0.1f, 0.2f};
  EXPECT_THROW(replica.begin_epoch(3, rates), stoke::UsageError);  // fewer rates than steps
  replica.begin_epoch(2, rates);
  auto range = loader.iter();
  auto it = range.begin();
  replica.train(*it);
  EXPECT_THROW(replica.reduce_and_step(0.2f), stoke::UsageError);
  replica.reduce_and_step(0.1f);
  EXPECT_EQ(replica.epoch_steps().size(), 1u);
}

/// A learner of the classifier on one Vulkan device at the changing rate of `kSchedule`.
stoke::Learner<vk::Backend, Classifier, stoke::Adam, stoke::CosineLr> cosine_learner(
    stoke::LearnerOptions options) {
  const auto devices = vk::Backend::devices(1);
  return {Classifier(devices[0], ToyImages::kPixels, ToyImages::kClasses, kToyModelSeed),
          stoke::Adam(0.9f, 0.99f, 1e-6f, 0.01f),
          stoke::CosineLr{.base = 0.1f, .minimum = 0.01f, .total_steps = 40, .warmup_steps = 5},
          devices, options};
}

TEST_F(StepTableTest, ALearnerStoppedMidEpochResumesItsTableAtTheRightStep) {
  // 13 steps an epoch; stopped at step 20, in the second epoch, where every step's rate differs:
  // the resumed epoch's table starts at the resumed step's rate and Adam's step number.
  const ToyImages train(100), valid(40, 9);
  auto unbroken = cosine_learner({.epochs = 3, .log = nullptr});
  const auto full = unbroken.fit(shader_train_loader(train, stoke::Remainder::pad),
                                 shader_valid_loader(valid, 16));
  const stoke::testing::TempDir dir;
  auto first = cosine_learner({.epochs = 3,
                               .checkpoint_dir = dir.path(),
                               .checkpoint_every_steps = 4,
                               .log = nullptr,
                               .stop_after_steps = 20});
  const auto before =
      first.fit(shader_train_loader(train, stoke::Remainder::pad), shader_valid_loader(valid, 16));
  auto second =
      cosine_learner({.epochs = 3, .checkpoint_dir = dir.path(), .resume = true, .log = nullptr});
  const auto after =
      second.fit(shader_train_loader(train, stoke::Remainder::pad), shader_valid_loader(valid, 16));
  expect_resumed_exactly(before, after, second, full, unbroken);
}

}  // namespace

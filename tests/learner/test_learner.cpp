// The split-per-device learner: equivalence with one device, exact resume, failures.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <memory>
#include <span>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <stoke/learner.hpp>
#include <stoke/stoke.hpp>

#include "stoke_test_files.hpp"
#include "toy_images.hpp"

namespace {

using stoke::cpu::Backend;
using stoke::cpu::ImageBatcher;

using stoke::testing::ToyImages;
constexpr std::size_t kPixels = ToyImages::kPixels;
constexpr std::size_t kClasses = ToyImages::kClasses;

auto loader_for(const ToyImages& data, std::size_t batch, std::uint64_t seed,
                std::size_t workers = 1) {
  return stoke::DataLoaderBuilder<Backend, ImageBatcher>({})
      .batch_size(batch)
      .shuffle(seed)
      .drop_last()
      .num_workers(workers)
      .build(data);
}

auto valid_loader_for(const ToyImages& data) {
  return stoke::DataLoaderBuilder<Backend, ImageBatcher>({}).batch_size(32).pad().build(data);
}

using ToyLearner = stoke::Learner<Backend, stoke::Mlp, stoke::Sgd, stoke::ConstantLr>;

ToyLearner make_learner(std::size_t devices, stoke::LearnerOptions options = {}) {
  options.log = nullptr;
  return ToyLearner(stoke::Mlp({kPixels, 12, kClasses}, 3), stoke::Sgd(0.1f, 0.9f),
                    stoke::ConstantLr{0.1f}, Backend::devices(devices), options);
}

std::filesystem::path fresh_directory(const std::string& name) {
  const auto path = std::filesystem::temp_directory_path() /
                    ("stoke_learner_" + name + "_" + std::to_string(::getpid()));
  std::filesystem::remove_all(path);
  std::filesystem::create_directories(path);
  return path;
}

void expect_near_all(std::span<const float> a, std::span<const float> b, float tolerance) {
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    ASSERT_NEAR(a[i], b[i], tolerance * (1.0f + std::fabs(b[i]))) << "element " << i;
  }
}

class LearnerEquivalence : public ::testing::TestWithParam<std::size_t> {};

TEST_P(LearnerEquivalence, NDevicesWithBatchBFollowOneDeviceWithBatchNB) {
  const std::size_t devices = GetParam();
  const ToyImages train(1000), valid(200, 9);
  auto several = make_learner(devices, {.epochs = 2});
  const auto split_run = several.fit(loader_for(train, 8, 5), valid_loader_for(valid));
  auto single = make_learner(1, {.epochs = 2});
  const auto single_run = single.fit(loader_for(train, 8 * devices, 5), valid_loader_for(valid));
  ASSERT_EQ(split_run.step_losses.size(), single_run.step_losses.size());
  ASSERT_GT(split_run.step_losses.size(), 10u);
  expect_near_all(split_run.step_losses, single_run.step_losses, 1e-4f);
  expect_near_all(several.model().parameters(), single.model().parameters(), 1e-4f);
  // The optimizer step was sharded over the devices; its state, gathered, is the whole one.
  expect_near_all(several.optimizer().state(), single.optimizer().state(), 1e-4f);
  EXPECT_NEAR(split_run.epochs.back().valid_accuracy, single_run.epochs.back().valid_accuracy,
              1e-9);
}

INSTANTIATE_TEST_SUITE_P(Devices, LearnerEquivalence, ::testing::Values(2u, 4u));

/// An optimizer behind a type that does not say its state is element-wise, so the learner
/// steps the whole model on every device instead of sharding the step.
template <class Inner>
struct Replicated {
  Inner inner;
  void step(std::span<float> parameters, std::span<const float> gradients, float rate) {
    inner.step(parameters, gradients, rate);
  }
  std::vector<float> state() const { return inner.state(); }
  void load_state(std::span<const float> state) { inner.load_state(state); }
};
static_assert(stoke::Optimizer<Replicated<stoke::Sgd>> &&
              !stoke::ElementwiseOptimizer<Replicated<stoke::Sgd>>);

/// Trains two epochs on 3 devices with `optimizer` sharded (each device steps a third of the
/// parameters) and replicated (every device steps them all), and expects the same losses,
/// weights and optimizer state bit for bit.
template <class Optim>
void expect_sharded_step_equals_replicated(const Optim& optimizer, float rate) {
  const ToyImages train(600), valid(100, 9);
  // 13 hidden units: no shard of the 3 is a whole number of 16-float blocks.
  stoke::Learner<Backend, stoke::Mlp, Optim, stoke::ConstantLr> sharded(
      stoke::Mlp({kPixels, 13, kClasses}, 3), optimizer, stoke::ConstantLr{rate},
      Backend::devices(3), {.epochs = 2, .log = nullptr});
  const auto sharded_run = sharded.fit(loader_for(train, 8, 2), valid_loader_for(valid));
  stoke::Learner<Backend, stoke::Mlp, Replicated<Optim>, stoke::ConstantLr> replicated(
      stoke::Mlp({kPixels, 13, kClasses}, 3), Replicated<Optim>{optimizer}, stoke::ConstantLr{rate},
      Backend::devices(3), {.epochs = 2, .log = nullptr});
  const auto replicated_run = replicated.fit(loader_for(train, 8, 2), valid_loader_for(valid));
  EXPECT_EQ(sharded_run.step_losses, replicated_run.step_losses);  // bit for bit
  EXPECT_TRUE(std::ranges::equal(sharded.model().parameters(), replicated.model().parameters()));
  EXPECT_EQ(sharded.optimizer().state(), replicated.optimizer().inner.state());
}

TEST(Learner, ShardedAndReplicatedSgdStepsAgreeBitForBit) {
  expect_sharded_step_equals_replicated(stoke::Sgd(0.1f, 0.9f), 0.1f);
}

TEST(Learner, ShardedAndReplicatedAdamStepsAgreeBitForBit) {
  // Adam's packet and scalar paths take the same correctly rounded operations (stoke::exact),
  // so a parameter's update does not depend on where its shard starts; test_optim.cpp holds
  // the sharp tests of that.
  expect_sharded_step_equals_replicated(stoke::Adam{}, 0.01f);
}

TEST(Learner, AdamShardedOverThreeDevicesFollowsOneDevice) {
  const ToyImages train(960), valid(100, 9);
  using AdamLearner = stoke::Learner<Backend, stoke::Mlp, stoke::Adam, stoke::ConstantLr>;
  const auto make = [](std::size_t devices) {
    return AdamLearner(stoke::Mlp({kPixels, 12, kClasses}, 3), stoke::Adam{},
                       stoke::ConstantLr{0.01f}, Backend::devices(devices),
                       {.epochs = 2, .log = nullptr});
  };
  auto several = make(3);  // 3 does not divide the parameter count: shards differ in size
  const auto split_run = several.fit(loader_for(train, 8, 6), valid_loader_for(valid));
  auto single = make(1);
  const auto single_run = single.fit(loader_for(train, 24, 6), valid_loader_for(valid));
  expect_near_all(split_run.step_losses, single_run.step_losses, 1e-4f);
  expect_near_all(several.model().parameters(), single.model().parameters(), 1e-4f);
  const std::size_t parameters = several.model().parameters().size();
  ASSERT_NE(parameters % 3, 0u);
  ASSERT_EQ(several.optimizer().state().size(), 2 + 2 * parameters);
  EXPECT_EQ(several.optimizer().steps(), single.optimizer().steps());
  expect_near_all(several.optimizer().state(), single.optimizer().state(), 1e-3f);
}

TEST(Learner, LearnsTheToyProblem) {
  const ToyImages train(2000), valid(400, 9);
  auto learner = make_learner(2, {.epochs = 3});
  const auto run = learner.fit(loader_for(train, 16, 1, 2), valid_loader_for(valid));
  ASSERT_EQ(run.epochs.size(), 3u);
  EXPECT_GT(run.epochs.back().valid_accuracy, 0.9);
  EXPECT_LT(run.epochs.back().train_loss, run.epochs.front().train_loss);
}

TEST(Learner, ValidationCountsEverySampleOnceAndNoPadding) {
  const ToyImages train(256), valid(203, 9);  // 203 does not split evenly over 3 devices
  auto learner = make_learner(3);
  const auto run = learner.fit(loader_for(train, 8, 1), valid_loader_for(valid));
  EXPECT_EQ(run.epochs.back().valid_items, 203u);
}

TEST(Learner, ResumingFromACheckpointContinuesExactly) {
  const ToyImages train(600), valid(100, 9);
  const auto dir = fresh_directory("resume");
  auto unbroken = make_learner(2, {.epochs = 2});
  const auto full = unbroken.fit(loader_for(train, 8, 4, 2), valid_loader_for(valid));

  // Stop mid-epoch 0 right after a checkpoint, as a crash would, then resume.
  auto first = make_learner(
      2,
      {.epochs = 2, .checkpoint_dir = dir, .checkpoint_every_steps = 13, .stop_after_steps = 26});
  const auto before = first.fit(loader_for(train, 8, 4, 2), valid_loader_for(valid));
  EXPECT_TRUE(before.stopped_early);
  auto second = make_learner(2, {.epochs = 2, .checkpoint_dir = dir, .resume = true});
  const auto after = second.fit(loader_for(train, 8, 4, 3), valid_loader_for(valid));
  EXPECT_TRUE(after.resumed);

  std::vector<float> stitched = before.step_losses;
  stitched.insert(stitched.end(), after.step_losses.begin(), after.step_losses.end());
  EXPECT_EQ(stitched, full.step_losses);  // bit for bit
  EXPECT_TRUE(std::ranges::equal(second.model().parameters(), unbroken.model().parameters()));
  EXPECT_EQ(after.epochs.back().train_loss, full.epochs.back().train_loss);
  std::filesystem::remove_all(dir);
}

TEST(Learner, ResumingFromACheckpointAfterAnEpochsLastStepGoesOnWithTheNextEpoch) {
  // 640 / (2 devices x 8) = 40 steps an epoch. A checkpoint after step 40 holds the loader at
  // epoch 1's start; a run stopped there (before its epoch's end, as a kill in validation)
  // must resume into epoch 1, not take epoch 0 again (it did: 120 steps, other weights).
  const ToyImages train(640), valid(64, 9);
  const auto dir = fresh_directory("epoch_last_step");
  auto unbroken = make_learner(2, {.epochs = 2});
  const auto full = unbroken.fit(loader_for(train, 8, 4), valid_loader_for(valid));
  auto first = make_learner(
      2,
      {.epochs = 2, .checkpoint_dir = dir, .checkpoint_every_steps = 40, .stop_after_steps = 40});
  const auto before = first.fit(loader_for(train, 8, 4), valid_loader_for(valid));
  auto second = make_learner(2, {.epochs = 2, .checkpoint_dir = dir, .resume = true});
  const auto after = second.fit(loader_for(train, 8, 4), valid_loader_for(valid));
  EXPECT_EQ(after.global_step, 80u);
  ASSERT_EQ(after.epochs.size(), 2u);  // epoch 0's end (validation, report), then epoch 1
  EXPECT_EQ(after.epochs.front().valid_loss, full.epochs.front().valid_loss);
  std::vector<float> stitched = before.step_losses;
  stitched.insert(stitched.end(), after.step_losses.begin(), after.step_losses.end());
  EXPECT_EQ(stitched, full.step_losses);  // bit for bit
  EXPECT_TRUE(std::ranges::equal(second.model().parameters(), unbroken.model().parameters()));
  std::filesystem::remove_all(dir);
}

TEST(Learner, ResumesOntoAnotherNumberOfDevicesSeeingEverySampleOnce) {
  const ToyImages train(640), valid(64, 9);
  const auto dir = fresh_directory("elastic");
  auto first = make_learner(
      2,
      {.epochs = 1, .checkpoint_dir = dir, .checkpoint_every_steps = 10, .stop_after_steps = 10});
  (void)first.fit(loader_for(train, 8, 4), valid_loader_for(valid));
  auto second = make_learner(4, {.epochs = 1, .checkpoint_dir = dir, .resume = true});
  const auto after = second.fit(loader_for(train, 8, 4), valid_loader_for(valid));
  // 10 steps x 2 devices x 8 consumed 160 samples; the other 480 are 15 steps on 4 devices.
  EXPECT_EQ(after.step_losses.size(), 15u);
  std::filesystem::remove_all(dir);
}

TEST(Learner, ALeftoverTemporaryFileDoesNotHideTheLastGoodCheckpoint) {
  const ToyImages train(200), valid(50, 9);
  const auto dir = fresh_directory("atomic");
  auto first = make_learner(1, {.epochs = 1, .checkpoint_dir = dir});
  (void)first.fit(loader_for(train, 8, 4), valid_loader_for(valid));
  // A crash between writing the temporary file and renaming it leaves this behind.
  std::ofstream(dir / "checkpoint.safetensors.tmp.999.0") << "half a checkpoint";
  auto second = make_learner(1, {.epochs = 2, .checkpoint_dir = dir, .resume = true});
  const auto after = second.fit(loader_for(train, 8, 4), valid_loader_for(valid));
  EXPECT_TRUE(after.resumed);
  EXPECT_EQ(after.epochs.size(), 1u);
  std::filesystem::remove_all(dir);
}

TEST(Learner, AFullDiskWhileCheckpointingStopsTrainingAndKeepsTheLastCheckpoint) {
  const ToyImages train(200), valid(50, 9);
  const auto dir = fresh_directory("full");
  auto first = make_learner(1, {.epochs = 1, .checkpoint_dir = dir});
  (void)first.fit(loader_for(train, 8, 4), valid_loader_for(valid));
  const auto path = dir / "checkpoint.safetensors";
  {
    // The next checkpoint cannot be written whole, as on a disk with half of it free.
    const stoke::testing::FileSizeLimit full(std::filesystem::file_size(path) / 2);
    auto second = make_learner(1, {.epochs = 2, .checkpoint_dir = dir, .resume = true});
    EXPECT_THAT([&] { (void)second.fit(loader_for(train, 8, 4), valid_loader_for(valid)); },
                ::testing::ThrowsMessage<stoke::Error>(::testing::AllOf(
                    ::testing::HasSubstr(path.string()), ::testing::HasSubstr("File too large"))));
  }
  std::vector<std::string> entries;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    entries.push_back(entry.path().filename().string());
  }
  EXPECT_EQ(entries, std::vector<std::string>{"checkpoint.safetensors"});
  auto third = make_learner(1, {.epochs = 2, .checkpoint_dir = dir, .resume = true});
  const auto after = third.fit(loader_for(train, 8, 4), valid_loader_for(valid));
  EXPECT_TRUE(after.resumed);  // from the checkpoint of epoch 1, which the failure kept
  EXPECT_EQ(after.epochs.size(), 1u);
  std::filesystem::remove_all(dir);
}

TEST(Learner, AFullDiskForTheMetricsLogStopsTrainingNamingIt) {
  const ToyImages train(200), valid(50, 9);
  auto learner = make_learner(2, {.epochs = 2, .metrics_csv = "/dev/full"});
  EXPECT_THAT(
      [&] { (void)learner.fit(loader_for(train, 8, 4), valid_loader_for(valid)); },
      ::testing::ThrowsMessage<stoke::Error>(::testing::AllOf(
          ::testing::HasSubstr("'/dev/full'"), ::testing::HasSubstr("No space left on device"))));
}

TEST(Learner, RefusesATruncatedOrCorruptCheckpointNamingTheFile) {
  const ToyImages train(200), valid(50, 9);
  const auto dir = fresh_directory("corrupt");
  auto first = make_learner(1, {.epochs = 1, .checkpoint_dir = dir});
  (void)first.fit(loader_for(train, 8, 4), valid_loader_for(valid));
  const auto path = dir / "checkpoint.safetensors";
  const auto size = std::filesystem::file_size(path);

  {  // a flipped bit in the weights
    std::fstream file(path, std::ios::in | std::ios::out | std::ios::binary);
    file.seekg(static_cast<std::streamoff>(size - 5));
    char byte = 0;
    file.read(&byte, 1);
    byte = static_cast<char>(byte ^ 0x10);
    file.seekp(static_cast<std::streamoff>(size - 5));
    file.write(&byte, 1);
  }
  auto corrupt = make_learner(1, {.epochs = 2, .checkpoint_dir = dir, .resume = true});
  EXPECT_THAT([&] { (void)corrupt.fit(loader_for(train, 8, 4), valid_loader_for(valid)); },
              ::testing::ThrowsMessage<stoke::InputError>(::testing::AllOf(
                  ::testing::HasSubstr(path.string()), ::testing::HasSubstr("CRC-32"))));

  std::filesystem::resize_file(path, size / 2);
  auto truncated = make_learner(1, {.epochs = 2, .checkpoint_dir = dir, .resume = true});
  EXPECT_THAT([&] { (void)truncated.fit(loader_for(train, 8, 4), valid_loader_for(valid)); },
              ::testing::ThrowsMessage<stoke::InputError>(::testing::HasSubstr(path.string())));
  std::filesystem::remove_all(dir);
}

TEST(Learner, AWorkerExceptionStopsTrainingWithThatError) {
  ToyImages train(800);
  train.failing_index = 517;
  const ToyImages valid(64, 9);
  auto learner = make_learner(3, {.epochs = 2});
  EXPECT_THAT(
      [&] { (void)learner.fit(loader_for(train, 8, 4, 2), valid_loader_for(valid)); },
      ::testing::ThrowsMessage<stoke::DataError>(::testing::HasSubstr("sample 517 is unreadable")));
}

TEST(Learner, WritesAMetricsCsvWithOneLinePerEpoch) {
  const ToyImages train(200), valid(50, 9);
  const auto dir = fresh_directory("csv");
  auto learner = make_learner(2, {.epochs = 3, .metrics_csv = dir / "metrics.csv"});
  (void)learner.fit(loader_for(train, 8, 4), valid_loader_for(valid));
  std::ifstream csv(dir / "metrics.csv");
  std::vector<std::string> lines;
  for (std::string line; std::getline(csv, line);) lines.push_back(line);
  ASSERT_EQ(lines.size(), 4u);
  EXPECT_THAT(lines[0], ::testing::StartsWith("epoch,train_loss,train_accuracy,valid_loss"));
  EXPECT_THAT(lines[0], ::testing::EndsWith("wait_s_device0,wait_s_device1"));
  EXPECT_THAT(lines[3], ::testing::StartsWith("2,"));
  std::filesystem::remove_all(dir);
}

/// A batcher that says it replaced 10 * epoch + 1 samples in each epoch: the learner only
/// relays what a `ReplacingBatcher` counts.
struct CountingBatcher : ImageBatcher {
  [[nodiscard]] std::size_t replaced_samples(std::size_t epoch) const { return 10 * epoch + 1; }
};

TEST(Learner, ReportsTheSamplesItsBatcherReplacedInTheMetricsTheCsvAndTheEpochLine) {
  static_assert(stoke::ReplacingBatcher<CountingBatcher>);
  static_assert(!stoke::ReplacingBatcher<ImageBatcher>);
  const ToyImages train(200), valid(50, 9);
  const auto dir = fresh_directory("replaced");
  auto learner = make_learner(2, {.epochs = 2, .metrics_csv = dir / "metrics.csv"});
  auto train_loader = stoke::DataLoaderBuilder<Backend, CountingBatcher>({})
                          .batch_size(8)
                          .shuffle(4)
                          .drop_last()
                          .build(train);
  const stoke::FitResult result = learner.fit(train_loader, valid_loader_for(valid));
  ASSERT_EQ(result.epochs.size(), 2u);
  EXPECT_EQ(result.epochs[0].replaced_samples, 1u);
  EXPECT_EQ(result.epochs[1].replaced_samples, 11u);
  EXPECT_THAT(stoke::describe(result.epochs[1], 2),
              ::testing::HasSubstr("| 11 bad samples replaced"));
  EXPECT_THAT(stoke::describe(result.epochs[0], 2), ::testing::EndsWith("| 1 bad sample replaced"));
  std::ifstream csv(dir / "metrics.csv");
  std::vector<std::string> lines;
  for (std::string line; std::getline(csv, line);) lines.push_back(line);
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_THAT(lines[0], ::testing::HasSubstr(",learning_rate,replaced_samples,wait_s_device0"));
  // The replaced count is the ninth column.
  const auto column = [](const std::string& line, std::size_t k) {
    std::istringstream fields(line);
    std::string field;
    for (std::size_t i = 0; i <= k; ++i) std::getline(fields, field, ',');
    return field;
  };
  EXPECT_EQ(column(lines[1], 8), "1");
  EXPECT_EQ(column(lines[2], 8), "11");
  std::filesystem::remove_all(dir);
}

TEST(Learner, AnImageBatcherWithoutBadSamplesReportsNone) {
  const ToyImages train(100), valid(50, 9);
  auto learner = make_learner(1, {.epochs = 1});
  const stoke::FitResult result = learner.fit(loader_for(train, 8, 4), valid_loader_for(valid));
  ASSERT_EQ(result.epochs.size(), 1u);
  EXPECT_EQ(result.epochs[0].replaced_samples, 0u);
}

TEST(Learner, CheckpointWeightsAreNamedTensors) {
  const ToyImages train(100), valid(50, 9);
  const auto dir = fresh_directory("named");
  auto learner = make_learner(1, {.epochs = 1, .checkpoint_dir = dir});
  (void)learner.fit(loader_for(train, 8, 4), valid_loader_for(valid));
  const auto file = stoke::load_safetensors(dir / "checkpoint.safetensors");
  EXPECT_THAT(file.names(), ::testing::IsSupersetOf({std::string("model.layers.0.weight"),
                                                     std::string("model.layers.1.bias"),
                                                     std::string("optimizer.state")}));
  EXPECT_EQ(file.tensor("model.layers.0.weight").shape, (std::vector<std::size_t>{kPixels, 12}));
  std::filesystem::remove_all(dir);
}

// The pieces of the learner: the `Replica` concept, the step tail, the epoch's exchange.
using ToyBatch = decltype(loader_for(std::declval<const ToyImages&>(), 1, 1))::batch_type;

/// A replica without `finish`: not a `Replica`.
struct ReplicaWithoutFinish {
  using model_type = stoke::Mlp;
  using optimizer_type = stoke::Sgd;
  using Collective = stoke::AnyCollective;
  static constexpr bool sums_on_host = true;
  void begin_epoch(std::size_t);
  void train(const ToyBatch&);
  void reduce_and_step(float);
  [[nodiscard]] std::vector<stoke::StepOutput> epoch_steps() const;
  void valid(const ToyBatch&);
  stoke::StepOutput take_valid_sums();
  [[nodiscard]] std::span<const float> parameters() const;
  std::vector<float> whole_optimizer_state();
  stoke::Mlp& model();
  stoke::Sgd& optimizer();
};

TEST(Replica, TheHostReplicaModelsItForItsModelsBatchesOnly) {
  static_assert(stoke::Replica<stoke::detail::HostReplica<stoke::Mlp, stoke::Sgd>, ToyBatch>);
  static_assert(!stoke::Replica<stoke::detail::HostReplica<stoke::Mlp, stoke::Sgd>, int>);
  static_assert(!stoke::Replica<ReplicaWithoutFinish, ToyBatch>);
}

TEST(StepTail, WritesLossCountCorrectInTheKernelsOrderAndReadsThemBack) {
  std::vector<float> tail(stoke::reduced_tail, -1.0f);
  const stoke::StepOutput sums{.loss_sum = 2.5, .correct = 3, .count = 7};
  stoke::detail::write_tail(tail, sums);
  EXPECT_EQ(tail, (std::vector<float>{2.5f, 7.0f, 3.0f}));
  const stoke::StepOutput read = stoke::detail::read_tail(tail);
  EXPECT_EQ(read.loss_sum, 2.5);
  EXPECT_EQ(read.count, 7u);
  EXPECT_EQ(read.correct, 3u);
}

TEST(EpochExchange, SumsTheDevicesPartsAndNamesADivergedReplica) {
  const std::vector<float> same{1.0f, 2.0f}, other{2.0f, 1.0f};
  const auto summed = [](stoke::detail::EpochExchange& a, stoke::detail::EpochExchange& b) {
    for (std::size_t i = 0; i < a.values().size(); ++i) {
      const float sum = a.values()[i] + b.values()[i];
      a.values()[i] = sum;
      b.values()[i] = sum;
    }
  };
  stoke::detail::EpochExchange a(2, 0, {.loss_sum = 1.0, .correct = 1, .count = 2}, 0.5, same);
  stoke::detail::EpochExchange b(2, 1, {.loss_sum = 2.0, .correct = 2, .count = 3}, 0.25, same);
  summed(a, b);
  EXPECT_NO_THROW(b.check_replicas(0));
  EXPECT_EQ(b.valid_sums().count, 5u);
  EXPECT_EQ(b.valid_sums().correct, 3u);
  EXPECT_EQ(b.valid_sums().loss_sum, 3.0);
  EXPECT_EQ(b.wait_seconds(), (std::vector<double>{0.5, 0.25}));

  stoke::detail::EpochExchange c(2, 0, {}, 0.0, same);
  stoke::detail::EpochExchange d(2, 1, {}, 0.0, other);  // the same values, swapped
  summed(c, d);
  EXPECT_THAT([&] { c.check_replicas(4); },
              ::testing::ThrowsMessage<stoke::Error>(::testing::HasSubstr(
                  "the replica on device 1 diverged from device 0 in epoch 4")));
}

TEST(Learner, ShowsALiveProgressLineAfterEveryHostStepThenTheEpochLine) {
  const ToyImages train(100), valid(50, 9);
  std::ostringstream log;
  ToyLearner learner(stoke::Mlp({kPixels, 12, kClasses}, 3), stoke::Sgd(0.1f, 0.9f),
                     stoke::ConstantLr{0.1f}, Backend::devices(2),
                     {.epochs = 1, .log = &log, .live_progress = true});
  (void)learner.fit(loader_for(train, 8, 4), valid_loader_for(valid));
  const std::string text = log.str();
  EXPECT_THAT(text, ::testing::HasSubstr("\repoch 1/1 step 1/6 loss "));
  EXPECT_THAT(text, ::testing::HasSubstr("\repoch 1/1 step 6/6 loss "));
  EXPECT_THAT(text, ::testing::HasSubstr("\repoch 1/1: train loss "));
}

TEST(ProgressLine, OnTheDeviceShowsTwentyTimesAnEpochAndAfterTheLastStep) {
  std::ostringstream log;
  const stoke::LearnerOptions options{.epochs = 3, .log = &log, .live_progress = true};
  const stoke::detail::ProgressLine line(options, 1, 101, false);
  EXPECT_TRUE(line.due(4));
  EXPECT_FALSE(line.due(5));
  EXPECT_TRUE(line.due(100));
  line.show(4, {.loss_sum = 3.0, .correct = 1, .count = 2});
  EXPECT_EQ(log.str(), "\repoch 2/3 step 5/101 loss 1.5000   ");
  const stoke::LearnerOptions quiet{.log = &log};
  EXPECT_FALSE(stoke::detail::ProgressLine(quiet, 0, 10, true).due(9));
}

}  // namespace

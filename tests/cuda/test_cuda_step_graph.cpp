// Captured steps (cuda::StepGraph through the Learner): on one device the Learner runs a step
// as one CUDA graph where it can, and that gives the bits of the uncaptured step: the same
// losses and parameters under SGD and Adam, with a rate that changes every step, a padded last
// batch and validation between epochs (each of which drops the graph), and the same after an
// exact resume; a captured run resumes onto two lanes (uncaptured) seeing every sample once.
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <stoke/cuda.hpp>
#include <stoke/learner.hpp>
#include <stoke/stoke.hpp>

#include "cuda_skip.hpp"
#include "toy_images.hpp"

namespace {

namespace cu = stoke::cuda;
using stoke::testing::ToyImages;
using GraphClassifier = stoke::SoftmaxClassifier<cu::Backend, cu::ImageBatch>;
using GraphBuilder = stoke::DataLoaderBuilder<cu::Backend, cu::ImageBatcher>;
constexpr std::uint64_t kGraphSeed = 11;
constexpr std::size_t kTrainImages = 480;
constexpr std::size_t kBatch = 7;  // 68 full batches and a padded one an epoch
constexpr std::size_t kStepsPerEpoch = (kTrainImages + kBatch - 1) / kBatch;

/// What a run leaves: its step losses, parameters, and the graphs it launched.
struct GraphRun {
  std::vector<float> losses;
  std::vector<float> parameters;
  std::size_t launches = 0;
};

/// Trains on one GPU for `epochs` with `optimizer` under a cosine schedule, steps captured or
/// not; with a `checkpoint_dir`, stops after `stop_after` steps, then resumes from there.
template <class Optim>
GraphRun train_on_one_gpu(const Optim& optimizer, bool capture, std::size_t epochs,
                          const std::filesystem::path& checkpoint_dir = {},
                          std::size_t stop_after = 0) {
  const ToyImages train(kTrainImages), valid(100, 9);
  const auto devices = cu::Backend::devices(1);
  const auto fit = [&](bool resume, std::size_t stop) {
    stoke::Learner<cu::Backend, GraphClassifier, Optim, stoke::CosineLr> learner(
        GraphClassifier(devices[0], ToyImages::kPixels, ToyImages::kClasses, kGraphSeed), optimizer,
        stoke::CosineLr{0.05f, 0.005f, epochs * kStepsPerEpoch, 10}, devices,
        {.epochs = epochs,
         .checkpoint_dir = checkpoint_dir,
         .checkpoint_every_steps = checkpoint_dir.empty() ? 0 : stop,
         .resume = resume,
         .log = nullptr,
         .stop_after_steps = stop,
         .capture_steps = capture});
    const auto result = learner.fit(
        GraphBuilder(cu::ImageBatcher{}).batch_size(kBatch).shuffle(5).pad().build(train),
        GraphBuilder(cu::ImageBatcher{}).batch_size(32).pad().build(valid));
    return std::pair(result, cu::Backend::download(learner.model().parameters()));
  };
  GraphRun run;
  if (!checkpoint_dir.empty()) {
    const auto [first, unused] = fit(false, stop_after);
    run.losses = first.step_losses;
    run.launches = first.captured_steps;
  }
  const auto [result, parameters] = fit(!checkpoint_dir.empty(), 0);
  run.losses.insert(run.losses.end(), result.step_losses.begin(), result.step_losses.end());
  run.parameters = parameters;
  run.launches += result.captured_steps;
  return run;
}

template <class Optim>
void expect_captured_equals_uncaptured(const Optim& optimizer) {
  const std::size_t epochs = 3;
  const GraphRun plain = train_on_one_gpu(optimizer, false, epochs);
  const GraphRun captured = train_on_one_gpu(optimizer, true, epochs);
  EXPECT_EQ(plain.launches, 0u);
  // Each epoch: the first step runs uncaptured (after validation dropped the graph), the second
  // is captured and launched, and the padded last one runs uncaptured.
  EXPECT_EQ(captured.launches, epochs * (kStepsPerEpoch - 2));
  ASSERT_EQ(captured.losses.size(), epochs * kStepsPerEpoch);
  EXPECT_EQ(captured.losses, plain.losses);          // bit for bit
  EXPECT_EQ(captured.parameters, plain.parameters);  // bit for bit
}

TEST(CudaStepGraph, CapturedStepsGiveTheBitsOfUncapturedStepsUnderSgd) {
  STOKE_CUDA_REQUIRE_DEVICES(1);
  expect_captured_equals_uncaptured(stoke::Sgd(0.05f, 0.9f));
}

TEST(CudaStepGraph, CapturedStepsGiveTheBitsOfUncapturedStepsUnderAdam) {
  STOKE_CUDA_REQUIRE_DEVICES(1);
  expect_captured_equals_uncaptured(stoke::Adam());
}

TEST(CudaStepGraph, ACapturedRunResumesExactlyFromAMidEpochCheckpoint) {
  STOKE_CUDA_REQUIRE_DEVICES(1);
  const auto dir = std::filesystem::temp_directory_path() / "stoke_cuda_step_graph_resume";
  std::filesystem::remove_all(dir);
  const GraphRun whole = train_on_one_gpu(stoke::Adam(), true, 2);
  const GraphRun resumed = train_on_one_gpu(stoke::Adam(), true, 2, dir, kStepsPerEpoch + 20);
  std::filesystem::remove_all(dir);
  EXPECT_GT(resumed.launches, 0u);
  EXPECT_EQ(resumed.parameters, whole.parameters);  // bit for bit
}

TEST(CudaStepGraph, ACapturedRunResumesOntoTwoLanesSeeingEverySampleOnce) {
  STOKE_CUDA_REQUIRE_DEVICES(1);
  const auto dir = std::filesystem::temp_directory_path() / "stoke_cuda_step_graph_elastic";
  std::filesystem::remove_all(dir);
  const ToyImages train(kTrainImages), valid(100, 9);
  const auto fit = [&](const std::vector<cu::Device>& devices, stoke::LearnerOptions options) {
    stoke::Learner<cu::Backend, GraphClassifier, stoke::Adam, stoke::ConstantLr> learner(
        GraphClassifier(devices[0], ToyImages::kPixels, ToyImages::kClasses, kGraphSeed),
        stoke::Adam(), stoke::ConstantLr{0.01f}, devices, std::move(options));
    return learner.fit(
        GraphBuilder(cu::ImageBatcher{}).batch_size(8).shuffle(5).drop_last().build(train),
        GraphBuilder(cu::ImageBatcher{}).batch_size(32).pad().build(valid));
  };
  const auto first = fit(cu::lanes_over(1, 1), {.epochs = 1,
                                                .checkpoint_dir = dir,
                                                .checkpoint_every_steps = 10,
                                                .log = nullptr,
                                                .stop_after_steps = 10});
  EXPECT_TRUE(first.stopped_early);
  EXPECT_EQ(first.captured_steps, 9u);  // steps 2 to 10
  const auto after = fit(cu::lanes_over(1, 2),
                         {.epochs = 1, .checkpoint_dir = dir, .resume = true, .log = nullptr});
  std::filesystem::remove_all(dir);
  EXPECT_TRUE(after.resumed);
  // 10 steps of 8 consumed 80 samples; the other 400 are 25 steps of 8 on each of 2 lanes.
  EXPECT_EQ(after.step_losses.size(), 25u);
  EXPECT_EQ(after.epochs.back().valid_items, 100u);
}

TEST(CudaStepGraph, AGraphIsStaleOnceATensorItTouchesIsMadeAnew) {
  STOKE_CUDA_REQUIRE_DEVICES(1);
  const auto device = cu::Backend::devices(1).front();
  cu::Buffer table = cu::Backend::zeros(device, stoke::step_table_header + 1);
  cu::StepGraph graph =
      cu::Backend::capture_step(device, [&] { cu::Backend::advance_step(table); });
  EXPECT_TRUE(graph.current());
  for (int i = 0; i < 3; ++i) graph.launch();
  const auto counter = cu::Backend::download(table);
  std::uint32_t word = 0;
  std::memcpy(&word, counter.data(), sizeof(word));
  EXPECT_EQ(word, 3u);  // the graph ran three times
  table = cu::Backend::zeros(device, stoke::step_table_header + 1);
  EXPECT_FALSE(graph.current());
}

// The capture's state lives in the device's context, for the capturing thread only: an
// operation another thread enqueues on the device meanwhile is refused, not recorded, and
// once the capture ends every thread's operations run uncaptured again.
TEST(CudaStepGraph, AnotherThreadsOperationDuringACaptureIsRefusedAndRunsAfterIt) {
  STOKE_CUDA_REQUIRE_DEVICES(1);
  const auto device = cu::Backend::devices(1).front();
  cu::Buffer table = cu::Backend::zeros(device, stoke::step_table_header + 1);
  cu::Buffer other = cu::Backend::zeros(device, stoke::step_table_header + 1);
  std::string refused;
  cu::StepGraph graph = cu::Backend::capture_step(device, [&] {
    cu::Backend::advance_step(table);
    std::thread([&] {
      try {
        cu::Backend::advance_step(other);
      } catch (const stoke::UsageError& error) {
        refused = error.what();
      }
    }).join();
  });
  EXPECT_NE(refused.find("from another thread while a step is captured"), std::string::npos)
      << refused;
  graph.launch();
  std::thread([&] { cu::Backend::advance_step(other); }).join();
  std::uint32_t word = 0;
  const auto counted = cu::Backend::download(table);
  std::memcpy(&word, counted.data(), sizeof(word));
  EXPECT_EQ(word, 1u);  // the graph's one launch, not the capture
  const auto other_counted = cu::Backend::download(other);
  std::memcpy(&word, other_counted.data(), sizeof(word));
  EXPECT_EQ(word, 1u);  // the other thread's step after the capture, not the refused one
}

// One capture at a time on a device: a capture begun inside another is a StateError.
TEST(CudaStepGraph, ACaptureInsideACaptureOnTheSameDeviceIsRefused) {
  STOKE_CUDA_REQUIRE_DEVICES(1);
  const auto device = cu::Backend::devices(1).front();
  cu::Buffer table = cu::Backend::zeros(device, stoke::step_table_header + 1);
  EXPECT_THROW(
      {
        cu::StepGraph outer = cu::Backend::capture_step(device, [&] {
          cu::StepGraph inner =
              cu::Backend::capture_step(device, [&] { cu::Backend::advance_step(table); });
        });
      },
      stoke::StateError);
  // The refused captures left the device as it was: a new one works.
  cu::StepGraph graph =
      cu::Backend::capture_step(device, [&] { cu::Backend::advance_step(table); });
  EXPECT_TRUE(graph.current());
}

}  // namespace

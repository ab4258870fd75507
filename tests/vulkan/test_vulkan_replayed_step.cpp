// The device replica's captured step, on the CPU machine: Vulkan cannot capture, so a stand-in
// backend (`ReplayingVulkan`) keeps a step's recording and runs it again at every launch. The
// replica's side then runs here as it does on CUDA: when it captures (the second step of a
// shape), what drops the graph (validation, a padded batch), how the slot is filled, and that the
// steps launched give the bits of uncaptured steps under SGD and Adam with a changing rate.
#include <gtest/gtest.h>

#include <atomic>
#include <cstddef>
#include <functional>
#include <span>
#include <vector>

#include <stoke/learner.hpp>
#include <stoke/stoke.hpp>
#include <stoke/vulkan.hpp>

#include "toy_images.hpp"
#include "vulkan_toy_training.hpp"
#include "vulkan_validation.hpp"

namespace {

namespace vk = stoke::vulkan;
using stoke::testing::ToyImages;

/// `vulkan::Backend` with a stand-in for capture (a `stoke::CapturingBackend`): a step's
/// "graph" keeps the recording and runs it again at each launch; `copy` goes through the host.
struct ReplayingVulkan : vk::Backend {
  /// The recording of one step, run again at each launch.
  struct StepGraph {
    std::function<void()> record;  ///< what the replica recorded
    /// Always current: its tensors are looked up again at each launch.
    [[nodiscard]] bool current() const noexcept { return static_cast<bool>(record); }
    /// Runs the recording (the step's operations) once more.
    void launch() {
      record();
      launches().fetch_add(1);
    }
  };
  /// Steps launched as a graph.
  static std::atomic<std::size_t>& launches() {
    static std::atomic<std::size_t> count{0};
    return count;
  }
  /// Graphs captured.
  static std::atomic<std::size_t>& captures() {
    static std::atomic<std::size_t> count{0};
    return count;
  }
  /// Keeps `record` (nothing runs until the launch, as with a CUDA graph).
  static StepGraph capture_step(const Device& /*device*/, const std::function<void()>& record) {
    captures().fetch_add(1);
    return StepGraph{record};
  }
  /// Copies `source` into `target` through the host.
  static void copy(Tensor& target, const Tensor& source) {
    const std::vector<float> values = download(source);
    upload(target, std::as_bytes(std::span(values)));
  }
};
static_assert(stoke::CapturingBackend<ReplayingVulkan>);
static_assert(!stoke::CapturingBackend<vk::Backend>);

using ReplayTest = stoke::testing::VulkanTest;
constexpr std::size_t kReplayEpochs = 3;
/// A run's shape: its images (8 a batch) and what becomes of the last rows.
struct ReplayShape {
  std::size_t images;
  stoke::Remainder remainder;
  /// The steps of an epoch.
  [[nodiscard]] std::size_t steps() const {
    return remainder == stoke::Remainder::pad ? (images + 7) / 8 : images / 8;
  }
};

/// What a run leaves: its losses and parameters, and the graphs it captured and launched.
struct ReplayRun {
  std::vector<float> losses;
  std::vector<float> parameters;
  std::size_t captures = 0;
  std::size_t launches = 0;
  std::size_t captured_steps = 0;  ///< as `fit` counted them
};

/// Trains the classifier on one Vulkan device through backend `B`, steps captured or not.
template <class B, class Optim>
ReplayRun train_one_device(const Optim& optimizer, const ReplayShape& shape, bool capture) {
  using Model = stoke::SoftmaxClassifier<B, vk::ImageBatch>;
  const ToyImages train(shape.images), valid(100, 9);
  const auto devices = vk::Backend::devices(1);
  const std::size_t captured = ReplayingVulkan::captures().load();
  const std::size_t launched = ReplayingVulkan::launches().load();
  stoke::Learner<B, Model, Optim, stoke::CosineLr> learner(
      Model(devices[0], ToyImages::kPixels, ToyImages::kClasses, stoke::testing::kToyModelSeed),
      optimizer, stoke::CosineLr{0.1f, 0.01f, kReplayEpochs * shape.steps(), 8}, devices,
      {.epochs = kReplayEpochs, .log = nullptr, .capture_steps = capture});
  const auto result = learner.fit(stoke::testing::shader_train_loader(train, stoke::Remainder::pad),
                                  stoke::testing::shader_valid_loader(valid));
  return {result.step_losses, vk::Backend::download(learner.model().parameters()),
          ReplayingVulkan::captures().load() - captured,
          ReplayingVulkan::launches().load() - launched, result.captured_steps};
}

/// Expects the launched steps of `shape`'s run to give the bits of its uncaptured steps, on the
/// stand-in backend and on Vulkan itself, with `launches` launched an epoch.
template <class Optim>
void expect_replayed_equals_uncaptured(const Optim& optimizer, const ReplayShape& shape,
                                       std::size_t launches) {
  const ReplayRun plain = train_one_device<vk::Backend>(optimizer, shape, true);
  const ReplayRun uncaptured = train_one_device<ReplayingVulkan>(optimizer, shape, false);
  const ReplayRun replayed = train_one_device<ReplayingVulkan>(optimizer, shape, true);
  EXPECT_EQ(plain.launches, 0u);
  EXPECT_EQ(uncaptured.launches, 0u);
  EXPECT_EQ(replayed.captures, kReplayEpochs);
  EXPECT_EQ(replayed.launches, kReplayEpochs * launches);
  EXPECT_EQ(replayed.captured_steps, replayed.launches);  // what `fit` reports
  EXPECT_EQ(uncaptured.captured_steps, 0u);
  ASSERT_EQ(replayed.losses.size(), kReplayEpochs * shape.steps());
  EXPECT_EQ(replayed.losses, plain.losses);  // bit for bit
  EXPECT_EQ(replayed.losses, uncaptured.losses);
  EXPECT_EQ(replayed.parameters, plain.parameters);
  EXPECT_EQ(replayed.parameters, uncaptured.parameters);
}

// 61 steps an epoch, the last padded: the first runs uncaptured (validation dropped the graph),
// the second is captured, the 59 to the padded one launched, and that one runs uncaptured.
TEST_F(ReplayTest, LaunchedStepsGiveTheBitsOfUncapturedStepsUnderSgdWithAPaddedBatch) {
  const ReplayShape shape{484, stoke::Remainder::pad};
  expect_replayed_equals_uncaptured(stoke::Sgd(0.1f, 0.9f), shape, shape.steps() - 2);
}

// 60 full steps an epoch: all but the first launched, so validation must drop the graph.
TEST_F(ReplayTest, LaunchedStepsGiveTheBitsOfUncapturedStepsUnderAdamAndValidationDropsTheGraph) {
  const ReplayShape shape{480, stoke::Remainder::drop};
  expect_replayed_equals_uncaptured(stoke::Adam(), shape, shape.steps() - 1);
}

}  // namespace

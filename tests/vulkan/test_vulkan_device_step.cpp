// The learner's device step on Vulkan never blocks its device thread: on one device there is no
// collective at all, on several the collective's host part runs on threads of its own and its
// result reaches the optimizer through a gated submission. A step's host waits are counted
// (`vulkan::host_waits`), and a step that waits again fails here. The fenced step gives the bits
// of a step that waits for every collective (a test backend whose collective blocks), and a
// one-device run stopped at a checkpoint resumes exactly.
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <latch>
#include <memory>
#include <optional>
#include <thread>
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
using DeviceStepTest = stoke::testing::VulkanTest;
using stoke::testing::expect_resumed_exactly;
using stoke::testing::kToyModelSeed;
using stoke::testing::shader_train_loader;
using stoke::testing::shader_valid_loader;

/// A collective that blocks its caller until every collective on a device buffer is done, as
/// the step did before it was fenced: the reference the fenced step must match bit for bit.
class BlockingCollective : public vk::HostStagedCollective {
 public:
  using vk::HostStagedCollective::all_gather;
  using vk::HostStagedCollective::all_reduce_sum;
  using vk::HostStagedCollective::HostStagedCollective;
  /// The sum, waited for.
  void all_reduce_sum(std::size_t participant, vk::Buffer& values) {
    vk::HostStagedCollective::all_reduce_sum(participant, values);
    values.written().wait();
  }
  /// The gather, waited for.
  void all_gather(std::size_t participant, vk::Buffer& values) {
    vk::HostStagedCollective::all_gather(participant, values);
    values.written().wait();
  }
};

/// The Vulkan backend with the blocking collective: a test backend for the reference runs.
struct BlockingVulkan : vk::Backend {
  using Collective = BlockingCollective;  ///< waits for every collective
  /// The blocking collective over `devices`.
  static std::unique_ptr<Collective> make_collective(const std::vector<vk::Device>& devices) {
    return std::make_unique<Collective>(devices);
  }
};
static_assert(stoke::DeviceBackend<BlockingVulkan>);

template <class B>
using ClassifierOn = stoke::SoftmaxClassifier<B, vk::ImageBatch>;

/// The host waits device thread `d` made while it took every step of `batches` through a
/// `DeviceReplica` of `devices.size()` devices (after the batches were made).
template <class Optim>
std::uint64_t waits_in_steps(const Optim& optimizer, std::size_t devices_wanted,
                             std::vector<std::uint64_t>& downloads) {
  const ToyImages train(192);
  const auto devices = vk::Backend::devices(devices_wanted);
  const auto collective = vk::Backend::make_collective(devices);
  const auto parts = stoke::split(shader_train_loader(train), devices);
  const ClassifierOn<vk::Backend> model(devices[0], ToyImages::kPixels, ToyImages::kClasses,
                                        kToyModelSeed);
  std::vector<std::uint64_t> waits(devices.size());
  downloads.assign(devices.size(), 0);
  std::vector<std::thread> threads;
  std::latch made(static_cast<std::ptrdiff_t>(devices.size()));  // as Learner::fit does
  for (std::size_t d = 0; d < devices.size(); ++d) {
    threads.emplace_back([&, d] {
      stoke::detail::DeviceReplica<vk::Backend, ClassifierOn<vk::Backend>, Optim> replica(
          model, optimizer, d, devices, *collective);
      made.arrive_and_wait();  // every replica forked from the model before any step
      auto part = parts[d];
      std::vector<stoke::Batch<vk::ImageBatch>> batches;
      for (auto& batch : part.iter()) batches.push_back(std::move(batch));
      replica.begin_epoch(batches.size());
      const std::uint64_t before = vk::host_waits();
      for (const auto& batch : batches) {
        replica.train(batch);
        replica.reduce_and_step(0.05f);
      }
      waits[d] = vk::host_waits() - before;
      const auto steps = replica.epoch_steps();  // the history: read here, and it waits
      downloads[d] = vk::host_waits() - before - waits[d];
      EXPECT_EQ(steps.size(), batches.size());
      EXPECT_GT(steps.back().count, 0u);
    });
  }
  for (auto& thread : threads) thread.join();
  std::uint64_t total = 0;
  for (const std::uint64_t w : waits) total += w;
  return total;
}

TEST_F(DeviceStepTest, OneDeviceStepsWithoutAHostWait) {
  std::vector<std::uint64_t> downloads;
  EXPECT_EQ(waits_in_steps(stoke::Adam(0.9f, 0.99f, 1e-6f, 0.01f), 1, downloads), 0u);
  ASSERT_EQ(downloads.size(), 1u);
  EXPECT_GE(downloads[0], 1u);  // the counter counts: reading the history waits
}

TEST_F(DeviceStepTest, TwoDevicesStepWithoutAHostWaitOnTheirThreads) {
  std::vector<std::uint64_t> downloads;
  EXPECT_EQ(waits_in_steps(stoke::Sgd(0.1f, 0.9f), 2, downloads), 0u);
  EXPECT_EQ(waits_in_steps(stoke::Adam(0.9f, 0.99f, 1e-6f, 0.01f), 3, downloads), 0u);
  for (const std::uint64_t d : downloads) EXPECT_GE(d, 1u);
}

/// A learner of the classifier on `count` devices of backend `B`.
template <class B, class Optim>
stoke::Learner<B, ClassifierOn<B>, Optim, stoke::ConstantLr> learner_on(
    std::size_t count, Optim optimizer,
    stoke::LearnerOptions options = {.epochs = 2, .log = nullptr}) {
  const auto devices = B::devices(count);
  return {ClassifierOn<B>(devices[0], ToyImages::kPixels, ToyImages::kClasses, kToyModelSeed),
          optimizer, stoke::ConstantLr{0.1f}, devices, options};
}

/// The fenced step and the blocking one train `count` devices to the same bits.
template <class Optim>
void expect_blocking_bits(std::size_t count, const Optim& optimizer) {
  const ToyImages train(480), valid(100, 9);
  auto fenced = learner_on<vk::Backend>(count, optimizer);
  const auto run = fenced.fit(shader_train_loader(train), shader_valid_loader(valid));
  auto blocking = learner_on<BlockingVulkan>(count, optimizer);
  const auto reference = blocking.fit(shader_train_loader(train), shader_valid_loader(valid));
  ASSERT_EQ(run.step_losses.size(), 2 * 480 / (8 * count));
  EXPECT_EQ(run.step_losses, reference.step_losses);
  EXPECT_EQ(vk::Backend::download(fenced.model().parameters()),
            vk::Backend::download(blocking.model().parameters()));
  EXPECT_EQ(fenced.optimizer().state(), blocking.optimizer().state());
}

TEST_F(DeviceStepTest, TheFencedStepGivesTheBitsOfABlockingOneOnTwoDevices) {
  expect_blocking_bits(2, stoke::Adam(0.9f, 0.99f, 1e-6f, 0.01f));
  expect_blocking_bits(2, stoke::Sgd(0.1f, 0.9f));
}

TEST_F(DeviceStepTest, TheFencedStepGivesTheBitsOfABlockingOneOnThreeDevices) {
  expect_blocking_bits(3, stoke::Adam(0.9f, 0.99f, 1e-6f, 0.01f));
}

TEST_F(DeviceStepTest, AOneDeviceRunStoppedAtACheckpointResumesExactly) {
  const ToyImages train(480), valid(100, 9);
  const stoke::Adam adam(0.9f, 0.99f, 1e-6f, 0.01f);
  auto unbroken = learner_on<vk::Backend>(1, adam);
  const auto full = unbroken.fit(shader_train_loader(train), shader_valid_loader(valid));
  const stoke::testing::TempDir dir;
  auto first = learner_on<vk::Backend>(1, adam,
                                       {.epochs = 2,
                                        .checkpoint_dir = dir.path(),
                                        .checkpoint_every_steps = 13,
                                        .log = nullptr,
                                        .stop_after_steps = 78});
  const auto before = first.fit(shader_train_loader(train), shader_valid_loader(valid));
  auto second = learner_on<vk::Backend>(
      1, adam, {.epochs = 2, .checkpoint_dir = dir.path(), .resume = true, .log = nullptr});
  const auto after = second.fit(shader_train_loader(train), shader_valid_loader(valid));
  expect_resumed_exactly(before, after, second, full, unbroken);
}

}  // namespace

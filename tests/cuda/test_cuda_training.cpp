// The CUDA backend as a `stoke::DeviceBackend`: its optimizer kernels step exactly as the host
// optimizers do, element by element; its softmax kernels compute what the host `Mlp` computes;
// its kernels wait for writes on other streams; NCCL all-gathers device buffers, uneven shards
// included. Without a CUDA device every test that needs one skips, saying why.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <stoke/cuda.hpp>
#include <stoke/learner.hpp>
#include <stoke/stoke.hpp>

#include "cuda_skip.hpp"

namespace {

namespace cu = stoke::cuda;

#if defined(STOKE_CUDA_HAS_NCCL)
using Classifier = stoke::SoftmaxClassifier<cu::Backend, cu::ImageBatch>;
static_assert(stoke::DeviceBackend<cu::Backend>);
static_assert(stoke::DeviceTrainStep<Classifier, cu::Backend, Classifier::BatchType>);
#endif

/// `count` floats of a fixed pseudo-random pattern in [-1, 1), different for every `seed`.
std::vector<float> pattern(std::size_t count, std::uint64_t seed) {
  stoke::SampleRng rng(seed, 0, 0);
  std::vector<float> out(count);
  for (float& x : out) x = static_cast<float>(rng() % 2000) / 1000.0f - 1.0f;
  return out;
}

/// A tensor on `device` holding `values`.
template <class T>
cu::Buffer tensor(const cu::Device& device, const std::vector<T>& values) {
  static_assert(sizeof(T) == sizeof(float));
  cu::Buffer out = cu::Backend::zeros(device, values.size());
  cu::Backend::upload(out, std::as_bytes(std::span(values)));
  return out;
}

/// A reduced buffer: `gradient_sums`, then a loss sum of 2.5, `count` items, 1 correct.
std::vector<float> reduced_values(const std::vector<float>& gradient_sums, float count) {
  std::vector<float> out = gradient_sums;
  out.insert(out.end(), {2.5f, count, 1.0f});
  return out;
}

constexpr std::size_t kParameters = 37;
constexpr stoke::Shard kShard{5, 25};  // a device's shard [5, 25)

/// Three steps (the second with no items) of `host` on the shard against the device kernel
/// `device_step(shape, parameters, reduced, history)`; every float must be equal, and the
/// history must hold every step's sums.
template <class HostOptimizer, class DeviceStep>
void expect_steps_match(HostOptimizer host, DeviceStep device_step, const cu::Device& device) {
  std::vector<float> expected = pattern(kParameters, 1);
  cu::Buffer parameters = tensor(device, expected);
  cu::Buffer history = cu::Backend::zeros(device, 3 * 3);
  const float counts[] = {4.0f, 0.0f, 7.0f};
  for (std::size_t step = 0; step < 3; ++step) {
    const std::vector<float> sums = pattern(kParameters, 10 + step);
    cu::Buffer reduced = tensor(device, reduced_values(sums, counts[step]));
    device_step(stoke::OptimizerStepShape{kParameters, kShard.begin, kShard.size(), 0.05f, step},
                parameters, reduced, history);
    if (counts[step] > 0) {
      std::vector<float> gradients(sums.begin() + static_cast<std::ptrdiff_t>(kShard.begin),
                                   sums.begin() + static_cast<std::ptrdiff_t>(kShard.end));
      for (float& g : gradients) g *= 1.0f / counts[step];
      host.step(std::span(expected).subspan(kShard.begin, kShard.size()), gradients, 0.05f);
    }
    const std::vector<float> actual = cu::Backend::download(parameters);
    for (std::size_t i = 0; i < kParameters; ++i) {
      ASSERT_EQ(actual[i], expected[i]) << "parameter " << i << " after step " << step;
    }
  }
  const std::vector<float> recorded = cu::Backend::download(history);
  for (std::size_t step = 0; step < 3; ++step) {
    EXPECT_EQ(recorded[3 * step], 2.5f) << "step " << step;
    EXPECT_EQ(recorded[3 * step + 1], counts[step]) << "step " << step;
    EXPECT_EQ(recorded[3 * step + 2], 1.0f) << "step " << step;
  }
}

TEST(CudaTraining, SgdKernelStepsAShardAsTheHostSgdDoes) {
  STOKE_CUDA_REQUIRE_DEVICES(1);
  const cu::Device device = cu::Backend::devices().front();
  cu::Buffer velocity = cu::Backend::zeros(device, kShard.size());
  expect_steps_match(
      stoke::Sgd(0.05f, 0.9f, 0.01f),
      [&](const stoke::OptimizerStepShape& shape, cu::Buffer& parameters, cu::Buffer& reduced,
          cu::Buffer& history) {
        cu::Backend::sgd_step({0.9f, 0.01f}, shape, parameters, velocity, reduced, history);
      },
      device);
}

TEST(CudaTraining, AdamKernelStepsAShardAsTheHostAdamDoes) {
  STOKE_CUDA_REQUIRE_DEVICES(1);
  const cu::Device device = cu::Backend::devices().front();
  cu::Buffer first = cu::Backend::zeros(device, kShard.size());
  cu::Buffer second = cu::Backend::zeros(device, kShard.size());
  std::uint64_t steps = 0;
  expect_steps_match(
      stoke::Adam(0.9f, 0.99f, 1e-6f, 0.01f),
      [&](const stoke::OptimizerStepShape& shape, cu::Buffer& parameters, cu::Buffer& reduced,
          cu::Buffer& history) {
        // The host counts only the steps with items; this test's zero-count step (the second)
        // changes nothing whatever its number.
        const std::uint64_t step = shape.history_slot == 1 ? steps : ++steps;
        cu::Backend::adam_step({0.9f, 0.99f, 1e-6f, 0.01f, std::max<std::uint64_t>(step, 1)}, shape,
                               parameters, first, second, reduced, history);
      },
      device);
}

/// A host batch of `labels.size()` rows of `features` inputs (the last `padding` of them
/// padding), for `Mlp`.
stoke::Batch<stoke::cpu::ClassificationBatch> host_batch(std::size_t features,
                                                         const std::vector<std::int32_t>& labels,
                                                         std::size_t padding) {
  const std::size_t rows = labels.size();
  stoke::cpu::Tensor<float> inputs({rows, features});
  std::ranges::copy(pattern(rows * features, 3), inputs.values().begin());
  std::vector<std::size_t> indices(rows);
  for (std::size_t i = 0; i < rows; ++i) indices[i] = 100 + i;
  return {{std::move(inputs), labels}, 0, 0, padding, std::move(indices)};
}

TEST(CudaTraining, SoftmaxKernelsComputeWhatTheHostMlpComputes) {
  STOKE_CUDA_REQUIRE_DEVICES(1);
  constexpr std::size_t kFeatures = 7, kClasses = 5;
  const cu::Device device = cu::Backend::devices().front();
  stoke::Mlp reference({kFeatures, kClasses}, 11);
  const std::vector<std::int32_t> labels{0, 4, 2, 2, 1, 3, 9, -1};  // the last two: padding
  const auto batch = host_batch(kFeatures, labels, 2);
  const stoke::SoftmaxShape shape{labels.size(), labels.size() - 2, kFeatures, kClasses};
  const cu::Buffer inputs = tensor(device, pattern(labels.size() * kFeatures, 3));
  const cu::Buffer label_tensor = tensor(device, labels);
  const cu::Buffer parameters = tensor(
      device, std::vector<float>(reference.parameters().begin(), reference.parameters().end()));
  cu::Buffer dlogits = cu::Backend::zeros(device, labels.size() * kClasses);
  cu::Buffer item_stats = cu::Backend::zeros(device, labels.size() * 2);
  cu::Buffer reduced =
      cu::Backend::zeros(device, reference.parameter_count() + stoke::reduced_tail);

  std::vector<float> expected(reference.parameter_count());
  const stoke::StepOutput host = reference.train_step(batch, expected);
  cu::Backend::softmax_forward(shape, inputs, label_tensor, parameters, dlogits, item_stats);
  cu::Backend::softmax_gradients(shape, inputs, dlogits, item_stats, reduced);
  const std::vector<float> actual = cu::Backend::download(reduced);
  for (std::size_t i = 0; i < expected.size(); ++i) {
    EXPECT_NEAR(actual[i], expected[i], 1e-5f * (1.0f + std::fabs(expected[i])))
        << "gradient " << i;
  }
  EXPECT_NEAR(actual[expected.size()], host.loss_sum, 1e-5 * (1.0 + host.loss_sum));
  EXPECT_EQ(actual[expected.size() + 1], static_cast<float>(host.count));
  EXPECT_EQ(actual[expected.size() + 2], static_cast<float>(host.correct));
  const std::vector<float> stats = cu::Backend::download(item_stats);
  for (std::size_t i = shape.real_rows; i < shape.rows; ++i) {
    EXPECT_EQ(stats[2 * i], 0.0f) << "padding item " << i;
    EXPECT_EQ(stats[2 * i + 1], 0.0f) << "padding item " << i;
  }

  cu::Buffer sums = cu::Backend::zeros(device, stoke::reduced_tail);
  cu::Backend::add_softmax_sums(shape, item_stats, sums);
  cu::Backend::add_softmax_sums(shape, item_stats, sums);  // adds
  const stoke::StepOutput valid = reference.valid_step(batch);
  const std::vector<float> summed = cu::Backend::download(sums);
  EXPECT_NEAR(summed[0], 2 * valid.loss_sum, 1e-5 * (1.0 + valid.loss_sum));
  EXPECT_EQ(summed[1], 2.0f * static_cast<float>(valid.count));
  EXPECT_EQ(summed[2], 2.0f * static_cast<float>(valid.correct));
}

TEST(CudaTraining, AKernelWaitsForAWriteQueuedOnAnotherStream) {
  STOKE_CUDA_REQUIRE_DEVICES(1);
  const cu::Device device = cu::Backend::devices().front();
  const std::vector<float> sums = pattern(kParameters, 20);
  const cu::Buffer source = tensor(device, reduced_values(sums, 2.0f));
  cu::Buffer reduced = cu::Backend::zeros(device, kParameters + stoke::reduced_tail);
  {
    // A slow copy on another stream writes `reduced`; the step must read what it wrote.
    const cu::Stream writer(device);
    const cu::DeviceGuard guard(device);
    source.written().enqueue_wait(writer.handle());
    reduced.enqueue_wait_for_uses(writer.handle());
    STOKE_CUDA_CHECK(cu::kernels::delayed_copy(source.floats().data(), reduced.floats().data(),
                                               reduced.floats().size(), 100'000'000,
                                               writer.handle()));
    source.record_use(writer.handle());
    reduced.mark_written(cu::Fence(device, writer.handle()));
  }
  std::vector<float> expected = pattern(kParameters, 1);
  cu::Buffer parameters = tensor(device, expected);
  cu::Buffer velocity = cu::Backend::zeros(device, kParameters);
  cu::Buffer history = cu::Backend::zeros(device, stoke::reduced_tail);
  cu::Backend::sgd_step({0.0f, 0.0f}, {kParameters, 0, kParameters, 0.5f, 0}, parameters, velocity,
                        reduced, history);
  std::vector<float> gradients = sums;
  for (float& g : gradients) g *= 1.0f / 2.0f;
  stoke::Sgd(0.5f).step(expected, gradients);
  EXPECT_EQ(cu::Backend::download(parameters), expected);
  EXPECT_EQ(cu::Backend::download(history), (std::vector<float>{2.5f, 2.0f, 1.0f}));
}

TEST(CudaTraining, AnUploadWaitsForAReadQueuedOnAnotherStream) {
  STOKE_CUDA_REQUIRE_DEVICES(1);
  const cu::Device device = cu::Backend::devices().front();
  const std::vector<float> before = pattern(1000, 30);
  cu::Buffer values = tensor(device, before);
  cu::Buffer copy = cu::Backend::zeros(device, before.size());
  {
    // A slow copy on another stream reads `values`; the upload must not overwrite them first.
    const cu::Stream reader(device);
    const cu::DeviceGuard guard(device);
    values.written().enqueue_wait(reader.handle());
    copy.enqueue_wait_for_uses(reader.handle());
    STOKE_CUDA_CHECK(cu::kernels::delayed_copy(values.floats().data(), copy.floats().data(),
                                               before.size(), 100'000'000, reader.handle()));
    values.record_use(reader.handle());
    copy.mark_written(cu::Fence(device, reader.handle()));
  }
  const std::vector<float> after = pattern(1000, 31);
  cu::Backend::upload(values, std::as_bytes(std::span(after)));
  EXPECT_EQ(cu::Backend::download(copy), before);
  EXPECT_EQ(cu::Backend::download(values), after);
}

TEST(CudaTraining, KernelsRefuseTensorsTooSmallAndShapesTheyDoNotTake) {
  // The checks run before any device work: no device is needed.
  cu::Buffer none;
  try {
    cu::Backend::sgd_step({}, {kParameters, 5, 20, 0.1f, 0}, none, none, none, none);
    FAIL() << "an empty parameter tensor was accepted";
  } catch (const std::invalid_argument& error) {
    EXPECT_STREQ(error.what(),
                 "stoke: cuda: the parameter tensor holds 0 floats, the step needs 25");
  }
  try {
    cu::Backend::softmax_forward({4, 4, 3, 33}, none, none, none, none, none);
    FAIL() << "33 classes were accepted";
  } catch (const std::invalid_argument& error) {
    EXPECT_STREQ(error.what(),
                 "stoke: cuda: a softmax classifier of 33 classes (1 to 32 are supported)");
  }
  try {
    cu::Backend::add_softmax_sums({4, 5, 3, 2}, none, none);
    FAIL() << "5 real rows of 4 were accepted";
  } catch (const std::invalid_argument& error) {
    EXPECT_STREQ(error.what(), "stoke: cuda: a batch of 4 rows cannot have 5 real ones");
  }
  EXPECT_THROW(cu::Backend::softmax_gradients({4, 4, 3, 2}, none, none, none, none),
               std::invalid_argument);
}

#if defined(STOKE_CUDA_HAS_NCCL)
/// All-gathers `length` floats over every visible device: participant `d` holds `10 d + i` in
/// its shard and -1 elsewhere; every participant must end with every shard.
void expect_all_gather(std::size_t length) {
  const auto devices = cu::Backend::devices();
  const std::size_t parts = devices.size();
  auto collective = cu::Backend::make_collective(devices);
  std::vector<std::vector<float>> gathered(parts);
  std::vector<std::thread> threads;
  for (std::size_t d = 0; d < parts; ++d) {
    threads.emplace_back([&, d] {
      std::vector<float> mine(length, -1.0f);
      const stoke::Shard own = stoke::shard_of(length, d, parts);
      for (std::size_t i = own.begin; i < own.end; ++i) mine[i] = static_cast<float>(10 * d + i);
      cu::Buffer values = tensor(devices[d], mine);
      collective->all_gather(d, values);
      gathered[d] = cu::Backend::download(values);
    });
  }
  for (auto& thread : threads) thread.join();
  std::vector<float> expected(length);
  for (std::size_t d = 0; d < parts; ++d) {
    const stoke::Shard shard = stoke::shard_of(length, d, parts);
    for (std::size_t i = shard.begin; i < shard.end; ++i)
      expected[i] = static_cast<float>(10 * d + i);
  }
  for (std::size_t d = 0; d < parts; ++d) EXPECT_EQ(gathered[d], expected) << "device " << d;
}

TEST(CudaTraining, CollectiveAllGathersDeviceBuffersWithEvenAndUnevenShards) {
  STOKE_CUDA_REQUIRE_DEVICES(1);
  const std::size_t parts = cu::Backend::devices().size();
  expect_all_gather(4 * parts);                  // equal shards: one ncclAllGather
  expect_all_gather(4 * parts + 1);              // uneven with two devices or more: broadcasts
  expect_all_gather(parts > 1 ? parts - 1 : 0);  // an empty shard (or an empty buffer)
}
#else
TEST(CudaTraining, CollectiveAllGathersDeviceBuffersWithEvenAndUnevenShards) {
  GTEST_SKIP() << "stoke::cuda was built without NCCL (STOKE_ENABLE_NCCL is OFF)";
}
#endif

}  // namespace

// What the CUDA training kernels do beyond the device-training conformance suite
// (tests/conformance/test_device_training.cpp): they wait for writes and reads queued on other
// streams, and refuse bad arguments before any device work. Without a CUDA device the tests
// that need one skip, saying why.
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
#include "device_tensors.hpp"

namespace {

namespace cu = stoke::cuda;
using stoke::testing::float_pattern;
using stoke::testing::reduced_values;

constexpr std::size_t kParameters = 37;

TEST(CudaTraining, AKernelWaitsForAWriteQueuedOnAnotherStream) {
  STOKE_CUDA_REQUIRE_DEVICES(1);
  const cu::Device device = cu::Backend::devices().front();
  const std::vector<float> sums = float_pattern(kParameters, 20);
  const cu::Buffer source =
      stoke::testing::device_tensor<cu::Backend>(device, reduced_values(sums, 2.0f));
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
  std::vector<float> expected = float_pattern(kParameters, 1);
  cu::Buffer parameters = stoke::testing::device_tensor<cu::Backend>(device, expected);
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
  const std::vector<float> before = float_pattern(1000, 30);
  cu::Buffer values = stoke::testing::device_tensor<cu::Backend>(device, before);
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
  const std::vector<float> after = float_pattern(1000, 31);
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
  } catch (const stoke::UsageError& error) {
    EXPECT_STREQ(error.what(),
                 "stoke: cuda: the parameter tensor holds 0 floats, the step needs 25");
  }
  try {
    stoke::SoftmaxKernels<cu::Buffer>::forward({4, 4, 3, 33}, none, none, none, none, none);
    FAIL() << "33 classes were accepted";
  } catch (const stoke::UsageError& error) {
    EXPECT_STREQ(error.what(),
                 "stoke: cuda: a softmax classifier of 33 classes (1 to 32 are supported)");
  }
  try {
    stoke::SoftmaxKernels<cu::Buffer>::add_sums({4, 5, 3, 2}, none, none);
    FAIL() << "5 real rows of 4 were accepted";
  } catch (const stoke::UsageError& error) {
    EXPECT_STREQ(error.what(), "stoke: cuda: a batch of 4 rows cannot have 5 real ones");
  }
  EXPECT_THROW(stoke::SoftmaxKernels<cu::Buffer>::gradients({4, 4, 3, 2}, none, none, none, none),
               stoke::UsageError);
}

}  // namespace

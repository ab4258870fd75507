// stoke::libtorch with stoke::cuda: a CUDA batch as CUDA torch::Tensors without a copy. The
// tensors are on the batch's GPU over its device memory, hold (once torch's current stream has
// waited for the batch) the values the CPU batcher computes, and the batch's epoch, step,
// padding and indices carry over. The values are read with the CUDA runtime, not torch's
// CUDA kernels, which this suite does not link (see adapters/libtorch/CMakeLists.txt).
// Without a CUDA device (or with a torch that sees none) every test skips saying why;
// STOKE_REQUIRE_CUDA=1 (scripts/gpu-check) makes that a failure.
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include <c10/cuda/CUDAFunctions.h>
#include <c10/cuda/CUDAStream.h>
#include <cuda_runtime_api.h>
#include <torch/torch.h>

#include <stoke/cuda.hpp>
#include <stoke/libtorch/cuda_tensors.hpp>
#include <stoke/stoke.hpp>

#include "cuda_skip.hpp"
#include "toy_images.hpp"

namespace {

using stoke::libtorch::to_torch;
using stoke::testing::ToyImages;

constexpr float kMean = 0.5F;
constexpr float kStd = 0.25F;

/// Skips (or, under STOKE_REQUIRE_CUDA=1, fails) where stoke or torch sees no CUDA device.
#define REQUIRE_CUDA_FOR_STOKE_AND_TORCH()                                          \
  do {                                                                              \
    STOKE_CUDA_REQUIRE_DEVICES(1);                                                  \
    if (c10::cuda::device_count() == 0) {                                           \
      if (stoke::testing::cuda_required()) FAIL() << "torch sees no CUDA device";   \
      GTEST_SKIP() << "torch sees no CUDA device (c10::cuda::device_count() is 0)"; \
    }                                                                               \
  } while (false)

/// The values of the CUDA tensor `tensor` (of `T`), once the work queued on torch's current
/// stream of its GPU is done.
template <class T>
std::vector<T> values_of(const torch::Tensor& tensor) {
  const auto gpu = tensor.device().index();
  EXPECT_EQ(cudaStreamSynchronize(c10::cuda::getCurrentCUDAStream(gpu).stream()), cudaSuccess);
  std::vector<T> out(static_cast<std::size_t>(tensor.numel()));
  EXPECT_EQ(cudaMemcpy(out.data(), tensor.data_ptr(), out.size() * sizeof(T), cudaMemcpyDefault),
            cudaSuccess);
  return out;
}

/// The first `count` toy images.
std::vector<stoke::LabeledImage> toy_items(const ToyImages& images, std::size_t count) {
  std::vector<stoke::LabeledImage> items;
  for (std::size_t i = 0; i < count; ++i) items.push_back(images.get(i));
  return items;
}

TEST(LibtorchCudaTensors, AreTheBatchDeviceMemoryOnItsGpu) {
  REQUIRE_CUDA_FOR_STOKE_AND_TORCH();
  const ToyImages images(8);
  const auto items = toy_items(images, 8);
  const stoke::cpu::ImageBatcher cpu{.mean = kMean, .std = kStd};
  const auto expected = cpu.batch(items, stoke::cpu::Device{});
  for (const stoke::cuda::Device& device : stoke::cuda::Backend::devices()) {
    auto batch = stoke::cuda::ImageBatcher(kMean, kStd).batch(items, device);
    const void* inputs = batch.inputs.data();
    const void* labels = batch.device_labels.data();
    const auto tensors = to_torch(std::move(batch));
    EXPECT_TRUE(tensors.inputs.is_cuda());
    EXPECT_EQ(tensors.inputs.device().index(), device.ordinal);
    EXPECT_EQ(tensors.labels.device(), tensors.inputs.device());
    EXPECT_EQ(tensors.inputs.data_ptr(), inputs);
    EXPECT_EQ(tensors.labels.data_ptr(), labels);
    EXPECT_EQ(tensors.inputs.scalar_type(), torch::kFloat);
    EXPECT_EQ(tensors.labels.scalar_type(), torch::kInt);
    EXPECT_EQ(tensors.inputs.sizes(),
              (std::vector<std::int64_t>{8, static_cast<std::int64_t>(ToyImages::kPixels)}));
    // Torch's current stream waited for the batch: once it is done, the values are there.
    const auto want = expected.inputs.values();
    EXPECT_EQ(values_of<float>(tensors.inputs), std::vector<float>(want.begin(), want.end()))
        << "on " << device;
    EXPECT_EQ(values_of<std::int32_t>(tensors.labels), expected.labels) << "on " << device;
  }
}

TEST(LibtorchCudaTensors, KeepTheBatchesEpochStepPaddingAndIndices) {
  REQUIRE_CUDA_FOR_STOKE_AND_TORCH();
  const ToyImages images(4);
  const auto device = stoke::cuda::Backend::devices().front();
  stoke::Batch<stoke::cuda::ImageBatch> batch{
      stoke::cuda::ImageBatcher(kMean, kStd).batch(toy_items(images, 4), device),
      2,
      7,
      1,
      {3, 0, 2, 3}};
  const auto tensors = to_torch(std::move(batch));
  EXPECT_EQ(tensors.epoch, 2U);
  EXPECT_EQ(tensors.step, 7U);
  EXPECT_EQ(tensors.padding, 1U);
  EXPECT_EQ(tensors.indices, (std::vector<std::size_t>{3, 0, 2, 3}));
  EXPECT_EQ(tensors.data.inputs.size(0), 4);
  // The tensors outlive the batch object they came from.
  std::vector<std::int32_t> labels;
  for (std::size_t i = 0; i < 4; ++i)
    labels.push_back(static_cast<std::int32_t>(images.get(i).label));
  EXPECT_EQ(values_of<std::int32_t>(tensors.data.labels), labels);
}

}  // namespace

// stoke::libtorch: a loader's host batches as torch::Tensors without a copy (DLPack). The
// tensors are the batch's memory, outlive the loader, give the buffer back to the batcher's
// pool once the last of them is gone (from any thread), and a libtorch training step runs on
// them.
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <thread>
#include <utility>
#include <vector>

#include <torch/torch.h>

#include <stoke/libtorch/tensors.hpp>
#include <stoke/stoke.hpp>

#include "stoke_test_support.hpp"
#include "toy_images.hpp"

namespace {

using stoke::cpu::BufferPool;
using stoke::cpu::ImageBatcher;
using stoke::cpu::StackBatcher;
using stoke::libtorch::to_torch;
using stoke::testing::ToyImages;
using Builder = stoke::DataLoaderBuilder<stoke::cpu::Backend, ImageBatcher>;

constexpr float kMean = 0.5F;
constexpr float kStd = 0.25F;
constexpr auto kPixels = static_cast<std::int64_t>(ToyImages::kPixels);

/// The batcher every test uses, drawing its storage from `pool`.
ImageBatcher batcher(const BufferPool& pool) {
  return ImageBatcher{.mean = kMean, .std = kStd, .pool = pool};
}

/// What `ImageBatcher` makes of image `index`: its pixels normalised, as a `{pixels}` tensor.
torch::Tensor expected_row(const ToyImages& images, std::size_t index) {
  const stoke::LabeledImage image = images.get(index);
  std::vector<float> row(image.pixels.size());
  const auto table = stoke::normalization_table(kMean, kStd);
  for (std::size_t k = 0; k < row.size(); ++k) row[k] = table[image.pixels[k]];
  return torch::tensor(row);
}

/// Whether the tensors of `batch` hold the images and labels its indices name.
void expect_batch_holds(const stoke::Batch<stoke::libtorch::ClassificationTensors>& batch,
                        const ToyImages& images) {
  ASSERT_EQ(batch.data.inputs.size(0), static_cast<std::int64_t>(batch.size()));
  for (std::size_t i = 0; i < batch.size(); ++i) {
    const std::size_t index = batch.indices[i];
    const auto row = static_cast<std::int64_t>(i);
    EXPECT_TRUE(torch::equal(batch.data.inputs[row], expected_row(images, index)))
        << "row " << i << " (image " << index << ")";
    EXPECT_EQ(batch.data.labels[row].item<std::int32_t>(),
              static_cast<std::int32_t>(images.get(index).label))
        << "row " << i << " (image " << index << ")";
  }
}

TEST(LibtorchTensors, AreTheBatchMemoryWithItsShapeAndTypes) {
  const ToyImages images(64);
  const BufferPool pool;
  auto loader = Builder(batcher(pool)).batch_size(16).shuffle(3).num_workers(2).build(images);
  std::size_t batches = 0;
  for (auto& batch : loader.iter()) {
    const float* inputs = batch.data.inputs.values().data();
    const std::int32_t* labels = batch.data.labels.data();
    const std::vector<std::size_t> indices = batch.indices;
    const auto tensors = to_torch(std::move(batch));
    EXPECT_EQ(tensors.data.inputs.data_ptr(), inputs);
    EXPECT_EQ(tensors.data.labels.data_ptr(), labels);
    EXPECT_EQ(tensors.data.inputs.sizes(), (std::vector<std::int64_t>{16, kPixels}));
    EXPECT_EQ(tensors.data.labels.sizes(), (std::vector<std::int64_t>{16}));
    EXPECT_EQ(tensors.data.inputs.scalar_type(), torch::kFloat);
    EXPECT_EQ(tensors.data.labels.scalar_type(), torch::kInt);
    EXPECT_TRUE(tensors.data.inputs.is_contiguous());
    EXPECT_EQ(tensors.data.inputs.device(), torch::Device(torch::kCPU));
    EXPECT_EQ(tensors.indices, indices);
    EXPECT_EQ(tensors.epoch, 0U);
    EXPECT_EQ(tensors.step, batches);
    expect_batch_holds(tensors, images);
    ++batches;
  }
  EXPECT_EQ(batches, 4U);
}

TEST(LibtorchTensors, WritesThroughATensorReachTheBatchMemory) {
  const ToyImages images(8);
  const BufferPool pool;
  auto loader = Builder(batcher(pool)).batch_size(8).num_workers(0).build(images);
  auto range = loader.iter();
  auto batch = std::move(*range.begin());
  const float* first = batch.data.inputs.values().data();
  const auto tensors = to_torch(std::move(batch));
  tensors.data.inputs[0][0].fill_(42.0F);
  EXPECT_EQ(*first, 42.0F);
}

TEST(LibtorchTensors, SurviveTheLoaderAndLaterBatchesFromTheSamePool) {
  const ToyImages images(48);
  const BufferPool pool;
  std::vector<stoke::Batch<stoke::libtorch::ClassificationTensors>> kept;
  {
    auto loader = Builder(batcher(pool)).batch_size(8).shuffle(5).num_workers(2).build(images);
    for (auto& batch : loader.iter()) kept.push_back(to_torch(std::move(batch)));
  }  // the loader, its workers and its batcher are gone
  ASSERT_EQ(kept.size(), 6U);
  // Another loader over other images, drawing from the same pool: were a kept batch's buffer
  // back in the pool, these batches would overwrite it.
  const ToyImages others(48, /*seed=*/99);
  auto again = Builder(batcher(pool)).batch_size(8).shuffle(6).num_workers(2).build(others);
  std::size_t made = 0;
  for (auto& batch : again.iter()) {
    made += batch.size();
    for (const auto& held : kept) {
      EXPECT_NE(batch.data.inputs.values().data(), held.data.inputs.data_ptr());
    }
  }
  EXPECT_EQ(made, 48U);
  for (const auto& batch : kept) expect_batch_holds(batch, images);
}

TEST(LibtorchTensors, GiveTheBufferBackToThePoolWhenTheLastTensorIsGone) {
  const ToyImages images(16);
  const BufferPool pool;
  // In the caller's thread: no batch is made ahead, so the pool holds only what comes back.
  auto loader = Builder(batcher(pool)).batch_size(16).num_workers(0).build(images);
  std::optional<stoke::Batch<stoke::libtorch::ClassificationTensors>> tensors;
  const float* memory = nullptr;
  std::size_t bytes = 0;
  {
    auto range = loader.iter();
    auto batch = std::move(*range.begin());
    memory = batch.data.inputs.values().data();
    bytes = batch.data.inputs.size() * sizeof(float);
    tensors = to_torch(std::move(batch));
  }
  ASSERT_EQ(pool.free_buffers(), 0U);
  torch::Tensor rows = tensors->data.inputs.slice(0, 4, 8);  // a view: it holds the batch too
  torch::Tensor labels = tensors->data.labels;
  tensors.reset();
  EXPECT_EQ(pool.free_buffers(), 0U) << "a view and the labels still use the batch";
  labels = torch::Tensor();
  EXPECT_EQ(pool.free_buffers(), 0U) << "a view still uses the batch";
  EXPECT_EQ(rows.data_ptr<float>(), memory + 4 * kPixels);
  // The last tensor goes in another thread.
  std::thread([last = std::move(rows)]() mutable { last = torch::Tensor(); }).join();
  EXPECT_EQ(pool.free_buffers(), 1U);
  const stoke::cpu::HostBuffer recycled = pool.acquire(bytes);
  EXPECT_EQ(static_cast<const void*>(recycled.data()), static_cast<const void*>(memory));
}

TEST(LibtorchTensors, FreeTheBufferWhenThePoolIsGone) {
  const ToyImages images(16);
  torch::Tensor inputs;
  {
    const BufferPool pool;
    auto loader = Builder(batcher(pool)).batch_size(16).num_workers(0).build(images);
    auto range = loader.iter();
    inputs = to_torch(std::move(*range.begin())).data.inputs;
  }
  // Under ASan, a buffer freed with its pool would make this a use after free.
  EXPECT_EQ(inputs.size(0), 16);
  EXPECT_TRUE(torch::equal(inputs[0], expected_row(images, 0)));
}

TEST(LibtorchTensors, StackedBatchesAndTheirPaddingMask) {
  const stoke::testing::IotaDataset numbers{10};
  auto loader =
      stoke::DataLoaderBuilder<stoke::cpu::Backend, StackBatcher<double>>(StackBatcher<double>{})
          .batch_size(4)
          .pad()
          .num_workers(0)
          .build(numbers);
  std::vector<std::vector<bool>> masks;
  for (auto& batch : loader.iter()) {
    const double* memory = batch.data.values().data();
    const auto tensors = to_torch(std::move(batch));
    EXPECT_EQ(tensors.data.data_ptr(), memory);
    EXPECT_EQ(tensors.data.scalar_type(), torch::kDouble);
    for (std::size_t i = 0; i < tensors.size(); ++i) {
      EXPECT_EQ(tensors.data[static_cast<std::int64_t>(i)].item<double>(),
                static_cast<double>(tensors.indices[i]));
    }
    const torch::Tensor mask = stoke::libtorch::mask(tensors);
    EXPECT_EQ(mask.scalar_type(), torch::kBool);
    std::vector<bool> values;
    for (std::int64_t i = 0; i < mask.size(0); ++i) values.push_back(mask[i].item<bool>());
    masks.push_back(values);
  }
  const std::vector<std::vector<bool>> expected{
      {true, true, true, true}, {true, true, true, true}, {true, true, false, false}};
  EXPECT_EQ(masks, expected);
}

TEST(LibtorchTensors, ElementTypesMapToTorchTypes) {
  EXPECT_EQ(to_torch(std::vector<std::uint8_t>{1, 2}).scalar_type(), torch::kByte);
  EXPECT_EQ(to_torch(std::vector<std::int8_t>{1}).scalar_type(), torch::kChar);
  EXPECT_EQ(to_torch(std::vector<std::int16_t>{1}).scalar_type(), torch::kShort);
  EXPECT_EQ(to_torch(std::vector<std::int64_t>{1}).scalar_type(), torch::kLong);
  EXPECT_EQ(to_torch(std::vector<float>{1}).scalar_type(), torch::kFloat);
  const std::vector<std::byte> bytes{std::byte{7}};
  EXPECT_EQ(to_torch(std::vector<std::byte>(bytes)).scalar_type(), torch::kByte);
  std::vector<std::int32_t> values{3, 1, 4, 1, 5};
  const std::int32_t* memory = values.data();
  const torch::Tensor tensor = to_torch(std::move(values));
  EXPECT_EQ(tensor.data_ptr(), memory);
  EXPECT_EQ(tensor.sum().item<std::int64_t>(), 14);
  const torch::Tensor empty = to_torch(std::vector<float>{});
  EXPECT_EQ(empty.numel(), 0);
  EXPECT_EQ(empty.sizes(), (std::vector<std::int64_t>{0}));
}

TEST(LibtorchTensors, ALinearClassifierTrainsOnThem) {
  torch::manual_seed(0);
  const ToyImages images(512);
  const BufferPool pool;
  auto loader = Builder(batcher(pool)).batch_size(32).shuffle(1).num_workers(2).build(images);
  torch::nn::Linear layer(kPixels, static_cast<std::int64_t>(ToyImages::kClasses));
  torch::optim::SGD optimizer(layer->parameters(), torch::optim::SGDOptions(0.1));
  const torch::Tensor before = layer->weight.detach().clone();
  std::vector<double> epoch_loss;
  double accuracy = 0;
  for (int epoch = 0; epoch < 4; ++epoch) {
    double loss_sum = 0;
    std::int64_t correct = 0;
    std::int64_t seen = 0;
    for (auto& batch : loader.iter()) {
      const auto tensors = to_torch(std::move(batch));
      const torch::Tensor labels = tensors.data.labels.to(torch::kLong);
      const torch::Tensor logits = layer->forward(tensors.data.inputs);
      const torch::Tensor loss = torch::nn::functional::cross_entropy(logits, labels);
      optimizer.zero_grad();
      loss.backward();
      optimizer.step();
      loss_sum += loss.item<double>();
      correct += (logits.argmax(1) == labels).sum().item<std::int64_t>();
      seen += labels.size(0);
    }
    epoch_loss.push_back(loss_sum);
    accuracy = static_cast<double>(correct) / static_cast<double>(seen);
  }
  EXPECT_FALSE(torch::equal(layer->weight.detach(), before));
  EXPECT_LT(epoch_loss.back(), 0.5 * epoch_loss.front());
  EXPECT_GT(accuracy, 0.95);  // the toy classes are separable; chance is 0.25
}

}  // namespace

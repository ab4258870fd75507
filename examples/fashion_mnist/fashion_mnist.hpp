#pragma once
/// @file
/// What the Fashion-MNIST examples share: the data, the loaders, the model and the schedule,
/// so the single-process and the MPI example train exactly the same thing.

#include <cstdint>
#include <filesystem>
#include <string>

#include <stoke/learner.hpp>
#include <stoke/stoke.hpp>

namespace fashion_mnist {

/// The training and test sets, read from `folder` (gzip or not).
struct Data {
  stoke::IdxClassificationDataset train;
  stoke::IdxClassificationDataset test;
};

/// The IDX file `name` in `folder`, plain or gzip-compressed.
inline std::filesystem::path idx_file(const std::filesystem::path& folder, const char* name) {
  const auto plain = folder / name;
  return std::filesystem::exists(plain) ? plain : folder / (std::string(name) + ".gz");
}

// --8<-- [start:data]
/// Reads the four IDX files once (and un-gzips them); samples point into that buffer.
inline Data load(const std::filesystem::path& folder) {
  return {stoke::IdxClassificationDataset(idx_file(folder, "train-images-idx3-ubyte"),
                                          idx_file(folder, "train-labels-idx1-ubyte")),
          stoke::IdxClassificationDataset(idx_file(folder, "t10k-images-idx3-ubyte"),
                                          idx_file(folder, "t10k-labels-idx1-ubyte"))};
}

/// Bytes become floats normalised with the training set's mean and deviation.
using Builder = stoke::DataLoaderBuilder<stoke::cpu::Backend, stoke::cpu::ClassificationBatcher>;
inline Builder builder() {
  return Builder({.mean = 0.2860f, .std = 0.3530f});
}

/// The training loader: shuffled every epoch, the last incomplete round dropped so every
/// device runs the same number of steps.
inline auto train_loader(const Data& data, std::size_t batch_size, std::uint64_t seed,
                         std::size_t workers) {
  return builder()
      .batch_size(batch_size)
      .shuffle(seed)
      .num_workers(workers)
      .prefetch(4)
      .drop_last()
      .build(data.train);
}

/// The test loader: padded so every test image is evaluated once; padding is left out.
inline auto test_loader(const Data& data, std::size_t workers) {
  return builder().batch_size(500).num_workers(workers).pad().build(data.test);
}
// --8<-- [end:data]

// --8<-- [start:model]
/// The model: 784 inputs, hidden layers of 256 and 128, 10 classes.
inline stoke::Mlp model(std::uint64_t seed) {
  return stoke::Mlp({28 * 28, 256, 128, 10}, seed);
}

/// Cosine decay from `learning_rate` to a twentieth of it over `epochs`, after half an epoch
/// of warm-up.
inline stoke::CosineLr schedule(float learning_rate, std::size_t epochs,
                                std::size_t steps_per_epoch) {
  return {.base = learning_rate,
          .minimum = learning_rate / 20,
          .total_steps = epochs * steps_per_epoch,
          .warmup_steps = steps_per_epoch / 2};
}
// --8<-- [end:model]

/// The learner every example uses.
using Learner = stoke::Learner<stoke::cpu::Backend, stoke::Mlp, stoke::Adam, stoke::CosineLr>;

}  // namespace fashion_mnist

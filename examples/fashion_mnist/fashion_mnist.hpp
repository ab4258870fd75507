#pragma once
/// @file
/// What the Fashion-MNIST examples share: the data, the loaders, the model and the schedule,
/// so the single-process and the MPI example train exactly the same thing.

#include <cstdint>
#include <filesystem>
#include <string>
#include <utility>

#include <CLI/CLI.hpp>

#include <stoke/learner.hpp>
#include <stoke/stoke.hpp>

namespace fashion_mnist {

/// The command-line settings both examples share.
struct Flags {
  std::filesystem::path data = "/usr/share/datasets/fashion-mnist";  ///< the IDX files
  std::size_t devices = 2;               ///< CPU devices (per rank, with MPI)
  std::size_t epochs = 10;               ///< epochs to train
  std::size_t batch_size = 64;           ///< samples per batch per device
  std::size_t workers = 1;               ///< loader threads per device
  float learning_rate = 1e-3f;           ///< peak learning rate (Adam)
  std::uint64_t seed = 7;                ///< seed of the shuffle and the initial weights
  std::filesystem::path checkpoint_dir;  ///< where checkpoints go (none if empty)
  std::filesystem::path metrics_csv;     ///< where per-epoch metrics go (none if empty)
  bool resume = false;                   ///< continue from the checkpoint
};

/// Adds the shared flags to `app`, writing into `flags`; `devices_help` says what a device
/// count means for this example.
inline void add_flags(CLI::App& app, Flags& flags, const std::string& devices_help) {
  app.add_option("--data", flags.data, "folder with the four IDX files (gzip or not)")
      ->capture_default_str();
  app.add_option("--devices", flags.devices, devices_help)->capture_default_str();
  app.add_option("--epochs", flags.epochs, "epochs to train")->capture_default_str();
  app.add_option("--batch-size", flags.batch_size, "samples per batch per device")
      ->capture_default_str();
  app.add_option("--workers", flags.workers, "loader threads per device")->capture_default_str();
  app.add_option("--lr", flags.learning_rate, "learning rate (the peak, with a schedule)")
      ->capture_default_str();
  app.add_option("--seed", flags.seed, "seed of the shuffle and the initial weights")
      ->capture_default_str();
  app.add_option("--checkpoint-dir", flags.checkpoint_dir,
                 "write a checkpoint here every epoch (rank 0, with MPI)");
  app.add_option("--metrics-csv", flags.metrics_csv,
                 "append per-epoch metrics to this CSV file (rank 0, with MPI)");
  app.add_flag("--resume", flags.resume, "continue from the checkpoint in --checkpoint-dir");
}

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
using Builder = stoke::DataLoaderBuilder<stoke::cpu::Backend, stoke::cpu::ImageBatcher>;
inline Builder builder() {
  return Builder({.mean = 0.2860f, .std = 0.3530f});
}

/// The training loader over `samples`: shuffled every epoch, the last incomplete round dropped
/// so every device runs the same number of steps.
template <stoke::Dataset Samples>
auto train_loader(Samples samples, std::size_t batch_size, std::uint64_t seed,
                  std::size_t workers) {
  return builder()
      .batch_size(batch_size)
      .shuffle(seed)
      .num_workers(workers)
      .queue_depth(4)
      .drop_last()
      .build(std::move(samples));
}

/// The training loader over the whole training set.
inline auto train_loader(const Data& data, std::size_t batch_size, std::uint64_t seed,
                         std::size_t workers) {
  return train_loader(data.train, batch_size, seed, workers);
}

/// The test loader over `samples`: padded so every test image is evaluated once; padding is
/// left out.
template <stoke::Dataset Samples>
auto test_loader(Samples samples, std::size_t workers) {
  return builder().batch_size(500).num_workers(workers).pad().build(std::move(samples));
}

/// The test loader over the whole test set.
inline auto test_loader(const Data& data, std::size_t workers) {
  return test_loader(data.test, workers);
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
